"""SGLang 0.5.12 (verl 0.9.1's pin), real, on CPU, with profwin-sglang installed beside it.

0.5.12 loads ``sglang.srt.plugins`` entry points, so profwin's server plugin runs there, but it has
no ``sglang.srt.managers.scheduler_components``: ``register()`` installs nothing, the server does
not report the plugin, and a client sending the encoded ``start_step`` would record nothing
(0.5.12 reads it as an absolute step). So the session records ``0:end`` and trims, saying why;
the windows below are the same checks as the 0.5.23 tests' and come out exact.
``stubs_0_5_12/sgl_kernel.py`` stands in for the CUDA-only kernels 0.5.12 imports (docstring).
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, Window
from profwin_sglang import session
from profwin_sglang.window import ASSUMED_V1
from profwin_traces import summarize

from .conftest import HERE, OLD_STUBS, OLD_VERSION, ROOT, Server
from .forward import forwarded

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

TOKENS = 12  # batches per request: 1 prefill + 11 decodes


def probe(python: Path, plugin_site: Path, *stubs: Path) -> Any:
    """plugin_probe.py in an SGLang environment with profwin-sglang's entry point installed."""
    paths = [
        HERE / "stubs",
        *stubs,
        plugin_site,
        *(ROOT / "packages" / p / "src" for p in ("profwin-sglang", "profwin-traces", "profwin-core")),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths))}
    env.pop("SGLANG_PLUGINS", None)
    proc = subprocess.run(
        [str(python), str(HERE / "plugin_probe.py")], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def test_register_on_the_real_0_5_12_package_installs_nothing_and_says_why(old_sglang_python: Path, plugin_site: Path) -> None:
    result = probe(old_sglang_python, plugin_site, OLD_STUBS)
    assert result["sglang"] == OLD_VERSION
    assert result["built"] == {
        "start": {"kind": "START_PROFILE", "num_steps": 3, "detailed_annotations": "absent", "struct": "dataclass"},
        "stop": {"kind": "STOP_PROFILE", "num_steps": 3, "detailed_annotations": "absent", "struct": "dataclass"},
    }
    assert result["profwin_hooks"] == []  # SGLang ran register(); nothing was hooked
    assert any(
        "relative profiling windows unavailable on this SGLang" in line
        and "No module named 'sglang.srt.managers.scheduler_components'" in line
        for line in result["plugin_log"]
    ), result["plugin_log"]
    # The launch-time check says the same without importing SGLang.
    assert result["imported_sglang_to_decide"] is False
    assert result["unavailable_here"].startswith("SGLang 0.5.12 has no sglang.srt.managers.scheduler_components.")


def test_register_on_the_real_0_5_23_package_installs_both_hooks(sglang_python: Path, plugin_site: Path) -> None:
    result = probe(sglang_python, plugin_site)
    assert result["sglang"] == "0.5.23"
    assert result["built"] == {
        "start": {"kind": "START_PROFILE", "num_steps": 3, "detailed_annotations": True, "struct": "msgspec"},
        "stop": {"kind": "STOP_PROFILE", "num_steps": 3, "detailed_annotations": True, "struct": "msgspec"},
    }
    assert [target.rsplit(".", 1)[-1] for target in result["profwin_hooks"]] == ["get_internal_state", "_profile"]
    assert result["applied"] == result["profwin_hooks"]  # what the capability report checks before answering
    assert result["unavailable_here"] is None
    assert result["plugin_log"] == []


def _spec(tmp_path: Path, window: str) -> ProfileSpec:
    # No option: 0.5.12 cannot tell which profiler it runs (no plugin, no
    # SGLANG_EXPOSE_OWN_ENV_VARS), but it runs on this machine, and its launcher's environment does.
    return ProfileSpec(window=Window.parse(window), output_dir=tmp_path, activities=("cpu",))


def _kinds(path: Path) -> list[str]:
    return [step.label.split()[0].removeprefix("step[").rstrip("]") for step in summarize(path, top=0).steps]


def _expected(window: Window) -> list[str]:
    end = TOKENS if window.end is None else min(window.end, TOKENS)
    return ["EXTEND" if k == 0 else "DECODE" for k in range(window.start, end)]


def _profile(server: Server, spec: ProfileSpec) -> tuple[Any, list[str]]:
    def run() -> tuple[Any, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with session(server.url, spec, api_key=server.api_key) as s:
                server.generate(TOKENS)
        return s, [str(w.message) for w in caught]

    return server.retry_on_kineto_crash(run)


def _check_window(server: Server, tmp_path: Path, window: str) -> None:
    win = Window.parse(window)
    s, caught = _profile(server, _spec(tmp_path, window))
    (result,) = s.results
    assert result.ok, result
    assert result.details["mode"] == "trim"
    assert (result.details["profiler"], result.details["profiler_source"]) == ("v1", "process")
    assert "start_step" not in result.details["request"]  # never the encoding 0.5.12 cannot read
    assert any("not active on this SGLang" in w and "SGLang 0.5.12 is older than 0.5.23" in w for w in caught), caught
    traces = [a for a in s.artifacts if a.kind == "trace"]
    assert len(traces) == 1, (s.results, caught)
    assert _kinds(traces[0].path) == _expected(win)
    assert traces[0].steps == Window(win.start, min(win.end or TOKENS, TOKENS))


def test_the_0_5_12_server_does_not_report_the_plugin(old_plugin_server: Server) -> None:
    info = old_plugin_server.server_info()
    assert info["version"] == OLD_VERSION
    assert all("profwin_sglang" not in state for state in info["internal_states"])
    assert "relative profiling windows unavailable on this SGLang" in old_plugin_server.log_tail(400)


def test_fresh_server_window_3_8(old_plugin_server: Server, tmp_path: Path) -> None:
    _check_window(old_plugin_server, tmp_path, "3:8")


def test_fresh_server_window_0_5(old_plugin_server: Server, tmp_path: Path) -> None:
    # 0.5.12's immediate mode records one batch fewer than asked (before SGLang PR #30215):
    # profwin asks for one more and keeps batches 0..4 by position.
    _check_window(old_plugin_server, tmp_path, "0:5")


@pytest.mark.parametrize("window", ["0:5", "3:8", "9:12"])
def test_warm_server_windows(old_plugin_server: Server, tmp_path: Path, window: str) -> None:
    old_plugin_server.warm()
    _check_window(old_plugin_server, tmp_path, window)


def test_behind_a_proxy_the_default_profiler_is_assumed_and_said(old_plugin_server: Server, tmp_path: Path) -> None:
    """Reached through a proxy, nothing tells which profiler 0.5.12 runs: profwin plans for
    SGLang's default (v1), says so once, and the window is exact."""
    with forwarded(old_plugin_server.port) as url:

        def run() -> tuple[Any, list[str]]:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with session(url, _spec(tmp_path, "3:8"), api_key=old_plugin_server.api_key) as s:
                    old_plugin_server.generate(TOKENS)
            return s, [str(w.message) for w in caught]

        s, caught = old_plugin_server.retry_on_kineto_crash(run)
    (result,) = s.results
    assert (result.details["profiler"], result.details["profiler_source"]) == ("v1", "assumed")
    assert sum(ASSUMED_V1 in w for w in caught) == 1, caught
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    assert _kinds(trace.path) == _expected(Window(3, 8))
