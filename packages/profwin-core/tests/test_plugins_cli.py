"""Plugin discovery through real entry points of test distributions, and the CLI.

The distributions below are written as ``*.dist-info`` folders on ``sys.path``: importlib.metadata
finds their entry points exactly as it finds installed wheels'.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import profwin
from profwin import PluginError, Window
from profwin.cli import main
from profwin.plugin import cluster

FAKE_BACKEND = """
from profwin.plugin import PluginSpec
from profwin.plugin.engines import EnginePlan

PLUGIN = PluginSpec(name="echo", kind="backend", target="fakeplug_echo:EchoBackend", summary="test backend")


class EchoBackend:
    name = "echo"
    default_form = "serve"

    def plan(self, spec, *, version=None):
        w = spec.window
        return EnginePlan(engine="echo", version=version or "1.0", version_source="given" if version else "assumed",
                          mechanism="per-session", window=w, records=w, output_dir=spec.output_dir,
                          launch={"skip": w.steps_to_skip, "record": w.steps_to_record})

    def target(self, target, *, api_key, timeout):
        raise NotImplementedError
"""

ENTRY_POINTS = """
[profwin.backends]
echo = fakeplug_echo:PLUGIN
broken = fakeplug_broken:PLUGIN
notaspec = fakeplug_echo:EchoBackend
oldapi = fakeplug_old:PLUGIN

[profwin.profilers]
needy = fakeplug_needy:PLUGIN

[profwin.clusters]
swarm = fakeplug_swarm:PLUGIN
lonely = fakeplug_swarm:LONELY
notaspec = fakeplug_swarm:Swarm
notacluster = fakeplug_swarm:NOT_ONE
"""

FAKE_CLUSTER = """
from profwin.plugin import PluginSpec


class Swarm:
    summary = "test cluster"
    def collect(self, pattern, dest, **kw): ...
    def summarize(self, paths, **kw): ...
    def deliver(self, paths, dest): ...
    def engine_target(self, actor, engine, **options): ...


PLUGIN = PluginSpec(name="swarm", kind="cluster", target="fakeplug_swarm:Swarm", summary="test cluster")
LONELY = PluginSpec(
    name="lonely", kind="cluster", target="fakeplug_swarm:Swarm", requires=("no_such_module_xyz",), install_hint="fakeplug[swarm]"
)
NOT_ONE = PluginSpec(name="notacluster", kind="cluster", target="fakeplug_swarm:NOTHING")
NOTHING = None
"""


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    info = site / "fakeplug-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (site / "fakeplug_echo.py").write_text(FAKE_BACKEND)
    (site / "fakeplug_swarm.py").write_text(FAKE_CLUSTER)
    (site / "fakeplug_broken.py").write_text("raise RuntimeError('this plugin is broken on purpose')\n")
    (site / "fakeplug_needy.py").write_text(
        "from profwin.plugin import PluginSpec\n"
        "PLUGIN = PluginSpec(name='needy', kind='profiler', target='fakeplug_needy:X', "
        "requires=('no_such_module_xyz',), install_hint='fakeplug[engine]')\n"
    )
    (site / "fakeplug_old.py").write_text(
        "from profwin.plugin import PluginSpec\nPLUGIN = PluginSpec(name='oldapi', kind='backend', target='fakeplug_old:X', api=1)\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr("profwin.discovery._loaded", {})
    return site


def by_name() -> dict[str, profwin.PluginInfo]:
    return {p.name: p for p in profwin.plugins()}


def test_broken_and_needy_plugins_are_reported_without_hiding_others(fake_site: Path) -> None:
    infos = by_name()
    assert infos["echo"].status == "ok"
    assert (infos["echo"].distribution, infos["echo"].version, infos["echo"].group) == ("fakeplug", "1.2.3", "profwin.backends")
    assert infos["broken"].status == "failed"
    assert "RuntimeError: this plugin is broken on purpose" in infos["broken"].detail
    assert infos["needy"].status == "missing dependency"
    assert infos["needy"].detail == "needs no_such_module_xyz; install fakeplug[engine]"
    assert infos["oldapi"].status == "incompatible"
    assert infos["oldapi"].detail == "written for plugin API 1, this profwin-core speaks 2: upgrade the plugin"
    assert infos["notaspec"].status == "failed"
    assert "not a profwin PluginSpec" in infos["notaspec"].detail
    assert infos["torch"].distribution == "profwin-core"  # core's own driver is still listed


def test_cluster_plugins_are_listed_with_what_they_need(fake_site: Path) -> None:
    infos = by_name()
    swarm = infos["swarm"]
    assert (swarm.group, swarm.status, swarm.distribution) == ("profwin.clusters", "ok", "fakeplug")
    assert swarm.to_dict()["summary"] == "test cluster"
    assert (infos["lonely"].status, infos["lonely"].detail) == (
        "missing dependency", "needs no_such_module_xyz; install fakeplug[swarm]"
    )  # fmt: skip
    assert infos["notaspec"].status == "failed"
    assert infos["notaspec"].detail == "fakeplug_swarm:Swarm is a type, not a profwin PluginSpec"
    assert cluster("swarm").summary == "test cluster"  # what --ray loads: the spec's target, made once
    assert cluster("swarm") is cluster("swarm")
    with pytest.raises(PluginError, match=r"^cluster 'notacluster' is a NoneType, not a profwin Cluster$"):
        cluster("notacluster")


def test_loading_plugins(fake_site: Path) -> None:
    echo = profwin.backend("echo")
    assert echo.plan(profwin.ProfileSpec(window=Window(2, 5))).launch == {"skip": 2, "record": 3}
    assert profwin.backend("echo") is echo  # loaded once
    with pytest.raises(PluginError, match=r"unknown backend 'nope'; installed backends: .*echo"):
        profwin.backend("nope")
    with pytest.raises(PluginError, match=r"unknown backend 'ehco'; installed backends: .*; did you mean 'echo'\?"):
        profwin.backend("ehco")
    with pytest.raises(PluginError, match=r"backend 'broken' from fakeplug 1\.2\.3 is not usable: failed"):
        profwin.backend("broken")
    with pytest.raises(PluginError, match="needs no_such_module_xyz"):
        profwin.profiler("needy")


def test_listing_imports_no_heavy_library(fake_site: Path) -> None:
    code = "import sys, profwin; profwin.plugins(); print(sorted(m for m in ('torch', 'vllm', 'sglang', 'torch_npu') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake_site), *sys.path])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_plugins_json(fake_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "plugins", "--json")
    assert code == 0
    listed = {p["name"]: p for p in json.loads(out)}
    assert listed["echo"]["status"] == "ok"
    assert listed["broken"]["status"] == "failed"
    assert set(listed["echo"]) == {"name", "group", "distribution", "version", "status", "detail", "summary"}


def test_cli_window_and_args(fake_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "window", "20:80", "--json", "--engine-version", "echo=9.9")
    assert code == 0
    info = json.loads(out)
    assert (info["steps_to_skip"], info["steps_to_record"], info["last_recorded_step"]) == (20, 60, 79)
    assert info["backends"]["echo"]["launch"] == {"skip": 20, "record": 60}
    assert info["backends"]["echo"]["version"] == "9.9"
    assert "failed" in info["backends"]["broken"]["status"]
    code, out, _ = run_cli(capsys, "window", "5:")
    assert "record until the session stops: step 5 to the end of the session" in out
    code, out, _ = run_cli(capsys, "args", "echo", "--window", "3:7")
    assert (code, out.splitlines()[:2]) == (0, ["--skip 3", "--record 4"])


def test_cli_errors_are_one_line_with_exit_2(fake_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "args", "nope", "--window", "1:2")
    assert code == 2
    assert err.startswith("profwin: error: unknown backend 'nope'")
    assert main(["window", "80:20"]) == 2  # a usage error is an exit code, like every error
    assert "window end must be > window start (got window start=80, window end=20)" in capsys.readouterr().err


def test_cli_bad_window_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["args", "vllm", "--window", "a:b"]) == 2
    assert "window start must be a non-negative integer or empty (got 'a'" in capsys.readouterr().err


def test_cli_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("window: '20:80'\nrecord: [shapes]\n")
    code, out, _ = run_cli(capsys, "validate", str(good), "--json")
    assert code == 0
    assert json.loads(out)["window"] == "20:80"
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        textwrap.dedent(
            """
            profiler:
              tool: torch
              ranks: [0, -1]
              tool_config:
                torch:
                  contents: [cpu, gpu]
                  profile_token_start: 80
                  profile_token_end: 20
            """
        )
    )
    code, _, err = run_cli(capsys, "validate", str(bad))
    assert code == 1
    assert "profiler.tool_config.torch.contents[1]: must be one of" in err
    flat = tmp_path / "flat.yaml"
    flat.write_text("window: '8:2'\nprefix: ''\nrecord: [stak]\n")
    code, out, _ = run_cli(capsys, "validate", str(flat), "--json")
    assert code == 1
    errors = json.loads(out)["errors"]
    assert [e["path"] for e in errors] == ["window", "record[0]", "prefix"]


def test_version_lists_core_and_plugins(fake_site: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake_site), *sys.path])}
    out = subprocess.run(
        [sys.executable, "-m", "profwin", "--version"], env=env, capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    # The umbrella's version and core's are each their own (core may be released alone).
    assert [line.split(" (")[0] for line in lines[:2]] == [
        f"profwin {importlib.metadata.version('profwin')}",
        f"profwin-core {profwin.__version__}",
    ]
    (fakeplug,) = [line for line in lines if line.startswith("fakeplug ")]
    assert fakeplug.startswith("fakeplug 1.2.3 (")
    assert "profwin.backends: echo, ok" in fakeplug


def test_validate_checks_plugin_options_without_their_engines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("window: '1:3'\noptions:\n  torch: {format: xml}\n  nosuchplugin: {a: 1}\n")
    code, _, err = run_cli(capsys, "validate", str(spec))
    assert code == 1
    assert "options.torch.format: must be one of ['json.gz', 'json'] (got 'xml')" in err
    spec.write_text("window: '1:3'\noptions:\n  torch: {format: json}\n  nosuchplugin: {a: 1}\n")
    code, _, err = run_cli(capsys, "validate", str(spec))
    assert code == 1
    assert "options.nosuchplugin: no plugin 'nosuchplugin'; installed: " in err
