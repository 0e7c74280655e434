"""Where a vLLM server writes its traces, read from its command line or its workers' reports.

The command lines are those ``/proc`` shows for the forms vLLM's docs and profwin's ``args`` give
(integration_tests/vllm runs a real server launched the docs' way)."""

from __future__ import annotations

from pathlib import Path

import pytest

from profwin.plugin.engines import EngineVersion, LocalProcess
from profwin_vllm.folders import elsewhere, launched_folder, reported_folder, serves_vllm

PY = "/venv/bin/python"
SERVE = (PY, "-m", "vllm.entrypoints.openai.api_server", "--model", "m")
V32 = EngineVersion.parse("0.32.0")


def server(*args: str, environ: dict[str, str] | None = None, cwd: str | None = "/work") -> LocalProcess:
    return LocalProcess(100, 1, (*SERVE, *args), environ if environ is not None else {"HOME": "/home/u"}, cwd)


@pytest.mark.parametrize(
    ("args", "folder"),
    [
        (("--profiler-config", '{"profiler": "torch", "torch_profiler_dir": "./vllm_profile"}'), "/work/vllm_profile"),
        (('--profiler-config={"profiler":"torch","torch_profiler_dir":"/data/t/"}',), "/data/t"),
        (("--profiler-config.profiler", "torch", "--profiler-config.torch_profiler_dir=~/traces"), "/home/u/traces"),
        (("--profiler-config.torch-profiler-dir", "../up"), "/up"),
        (("--profiler-config", '{"profiler": "proton", "proton_profiler_dir": "p"}'), "/work/p"),
        # Nothing profwin can list: another profiler, a URI, no folder, what it cannot parse.
        (("--profiler-config", '{"profiler": "cuda"}'), None),
        (("--profiler-config", '{"profiler": "torch", "torch_profiler_dir": "gs://b/t"}'), None),
        ((), None),
        (("--profiler-config", "{not json"), None),
        (("--profiler-config", "[1]"), None),
        (("--profiler-config",), None),
        (("--profiler-config.torch_profiler_dir", "~other/t"), None),
    ],
)
def test_the_folder_of_a_command_line(args: tuple[str, ...], folder: str | None) -> None:
    assert launched_folder(server(*args), V32) == folder


def test_relative_folders_need_the_working_directory_and_the_environment_variable_its_releases() -> None:
    assert launched_folder(server("--profiler-config.torch_profiler_dir", "t", cwd=None), V32) is None
    env = {"VLLM_TORCH_PROFILER_DIR": "/env/t", "HOME": "/home/u"}
    assert launched_folder(server(environ=env), EngineVersion.parse("0.15.1")) == "/env/t"
    assert launched_folder(server(environ=env), EngineVersion.parse("0.16.0")) is None  # removed in 0.16
    assert (
        launched_folder(server("--profiler-config.torch_profiler_dir", "/c", environ=env), EngineVersion.parse("0.15.1")) == "/c"
    )


def test_which_command_lines_are_vllm_servers() -> None:
    assert serves_vllm(SERVE)
    assert serves_vllm((PY, "/venv/bin/vllm", "serve", "m"))
    assert serves_vllm((PY, "-m", "vllm.entrypoints.cli.main", "serve", "m"))
    assert not serves_vllm(("ssh", "-L", "8000:gpu:8000", "gpu"))  # a tunnel: the server is elsewhere
    assert not serves_vllm((PY, "-m", "sglang.launch_server"))
    assert not serves_vllm(("VLLM::EngineCore",))


def test_the_workers_report() -> None:
    assert reported_folder([{"folder": "/t"}, {"folder": "/t"}]) == "/t"
    assert reported_folder([{"folder": "/t"}, {"folder": "/u"}]) is None
    assert reported_folder([{"folder": None}]) is None
    assert reported_folder([{}]) is None
    assert reported_folder([]) is None
    assert reported_folder(None) is None


def test_elsewhere_names_the_servers_folder(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "t")
    assert elsewhere(str(tmp_path / "t"), tmp_path / "link") is None
    assert elsewhere(str(tmp_path / "t") + "/", tmp_path / "t") is None
    assert elsewhere(None, tmp_path) is None
    said = elsewhere(str(tmp_path / "t"), tmp_path / "out")
    assert said == (
        f"this server writes its traces to {tmp_path / 't'} (the folder of its --profiler-config, fixed when it was "
        f"launched), not to {tmp_path / 'out'}, where this session would look for them: nothing was sent; "
        f"use --out {tmp_path / 't'} (output_dir)"
    )
