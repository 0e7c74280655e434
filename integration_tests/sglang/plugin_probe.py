"""What SGLang itself does with profwin-sglang's server plugin, in an SGLang environment:
``python plugin_probe.py`` prints JSON.

SGLang's own loader (``sglang.srt.plugins.load_plugins``, what every server process calls) runs
the plugin's ``register()``; the probe reports which hook targets profwin registered in SGLang's
``HookRegistry``, what the plugin logged, and what :func:`unavailable_here` (the launch-time
check verl's builders use) says in the same environment.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import sys


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def main() -> None:
    from profwin_sglang.server_plugin import unavailable_here

    collected = Collect()
    logging.getLogger("profwin_sglang").addHandler(collected)
    logging.getLogger("profwin_sglang").setLevel(logging.INFO)
    before = unavailable_here()  # decided without importing SGLang
    imported_before = "sglang" in sys.modules
    from sglang.srt.plugins import load_plugins
    from sglang.srt.plugins.hook_registry import HookRegistry

    load_plugins()
    hooks = sorted(target for target, entries in HookRegistry._hooks.items() if any(
        getattr(part, "__module__", "") == "profwin_sglang.server_plugin" for entry in entries for part in entry))  # fmt: skip
    # profwin's builder on this SGLang's own ProfileReq (a dataclass with ``type`` before 0.5.16, a
    # kw_only msgspec struct with ``req_type`` after), with a field only newer versions have.
    from sglang.srt.managers.io_struct import ProfileReq, ProfileReqType

    from profwin_sglang import build_profile_req

    fields = {"output_dir": "/tmp/x", "num_steps": 3, "activities": ["CPU"], "detailed_annotations": True}
    built = {}
    for start in (True, False):
        req = build_profile_req(ProfileReq, ProfileReqType, fields, start=start)
        kind = getattr(req, "req_type", None) or getattr(req, "type", None)
        built["start" if start else "stop"] = {
            "kind": kind.name,
            "num_steps": req.num_steps,
            "detailed_annotations": getattr(req, "detailed_annotations", "absent"),
            "struct": "msgspec" if hasattr(type(req), "__struct_fields__") else "dataclass",
        }
    json.dump(
        {
            "built": built,
            "sglang": importlib.metadata.version("sglang"),
            "unavailable_here": before,
            "imported_sglang_to_decide": imported_before,
            "profwin_hooks": hooks,
            "applied": sorted(target for target in hooks if target in HookRegistry._patched),
            "plugin_log": collected.lines,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
