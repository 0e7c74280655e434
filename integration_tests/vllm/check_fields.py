"""Validate launch configs and start requests with the installed vLLM's own code (no engine).

Run by test_fields.py with an engine environment's python:
``python check_fields.py <cases.json> <result.json>``. ``cases.json`` maps a case name to
``{"config": {...} | null, "start_kwargs": {...}, "request": {...} | null}``. For each case the
config goes through ``--profiler-config JSON`` of vLLM's own argument parser (what ``vllm serve``
does; an invalid one is an ``argparse`` error, the launch abort) and through
``ProfilerConfig(**config)`` (what ``LLM(profiler_config=dict)`` does); the keywords are bound
to ``LLM.start_profile``'s signature and the body is validated by ``StartProfileRequest`` where
the version has one. The result also lists what the version has: its ``ProfilerConfig`` fields,
profiler kinds, ``start_profile`` keywords and body fields.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import json
import sys
import typing
from pathlib import Path
from typing import Any


def _error(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:600]


def _literals(hint: Any) -> set[str]:
    """The strings of a ``Literal[...] | None`` hint."""
    found: set[str] = set()
    for arg in typing.get_args(hint):
        found |= {arg} if isinstance(arg, str) else _literals(arg)
    return found


def main(cases_path: Path, result_path: Path) -> None:
    import vllm
    from vllm.config.profiler import ProfilerConfig
    from vllm.engine.arg_utils import EngineArgs
    from vllm.entrypoints.llm import LLM

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older layout
        from vllm.utils import FlexibleArgumentParser  # type: ignore[attr-defined,no-redef]
    try:
        from vllm.entrypoints.serve.profile.api_router import StartProfileRequest
    except ImportError:
        StartProfileRequest = None

    parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    start_profile = inspect.signature(LLM.start_profile)
    kinds = _literals(typing.get_type_hints(ProfilerConfig)["profiler"])
    report: dict[str, Any] = {
        "version": vllm.__version__,
        "fields": [f.name for f in dataclasses.fields(ProfilerConfig)],
        "kinds": sorted(kinds),
        "start_keywords": [p for p in start_profile.parameters if p != "self"],
        "body_fields": None if StartProfileRequest is None else sorted(StartProfileRequest.model_fields),
        "cases": {},
    }
    for name, case in json.loads(cases_path.read_text()).items():
        outcome: dict[str, Any] = {}
        config = case["config"]
        if config is not None:
            stderr = io.StringIO()
            try:
                with contextlib.redirect_stderr(stderr):
                    parsed = parser.parse_args(["--profiler-config", json.dumps(config)]).profiler_config
                outcome["cli"] = {
                    "ok": True,
                    "profiler": parsed.profiler,
                    "delay": parsed.delay_iterations,
                    "max": parsed.max_iterations,
                }
            except SystemExit:
                outcome["cli"] = {"ok": False, "error": " ".join(stderr.getvalue().split()[-60:])}
            try:
                made = ProfilerConfig(**config)
                outcome["python"] = {"ok": True, "profiler": made.profiler}
            except Exception as exc:
                outcome["python"] = {"ok": False, "error": _error(exc)}
        try:
            start_profile.bind(None, **case["start_kwargs"])
            outcome["start_kwargs"] = {"ok": True}
        except TypeError as exc:
            outcome["start_kwargs"] = {"ok": False, "error": _error(exc)}
        if case["request"] is not None and StartProfileRequest is not None:
            try:
                body = StartProfileRequest.model_validate_json(json.dumps(case["request"]))
                # extra="ignore": a field the version does not know would vanish here.
                outcome["request"] = {"ok": True, "kept": sorted(body.model_dump(exclude_none=True))}
            except Exception as exc:
                outcome["request"] = {"ok": False, "error": _error(exc)}
        report["cases"][name] = outcome
    result_path.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
