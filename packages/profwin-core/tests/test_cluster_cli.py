"""``profwin collect`` and ``profwin summarize --ray`` in core: the optional ADDRESS after
``--ray``, and what a user without profwin-ray is told. (With profwin-ray and a real Ray cluster:
integration_tests/ray/.)"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from profwin.cli import main
from profwin.cli_runner import ray_address_first


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["summarize", "--ray", "/tmp/traces"], ["summarize", "--ray", "auto", "/tmp/traces"]),
        (["summarize", "--ray", "traces"], ["summarize", "--ray", "auto", "traces"]),
        (["summarize", "--ray", "10.0.0.5:6379", "t"], ["summarize", "--ray", "10.0.0.5:6379", "t"]),
        (["summarize", "--ray", "ray://head:10001", "t"], ["summarize", "--ray", "ray://head:10001", "t"]),
        (["summarize", "--ray", "auto", "t"], ["summarize", "--ray", "auto", "t"]),
        (["summarize", "--ray=/x", "t"], ["summarize", "--ray=/x", "t"]),
        (["collect", "--ray", "--from", "p"], ["collect", "--ray", "auto", "--from", "p"]),
        (["summarize", "t", "--ray"], ["summarize", "t", "--ray"]),
    ],
)
def test_ray_takes_an_address_only_when_one_follows(argv: list[str], expected: list[str]) -> None:
    assert ray_address_first(argv) == expected


@pytest.fixture
def no_cluster_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.entry_points

    def without_clusters(**kwargs: str) -> object:
        return [] if kwargs.get("group") == "profwin.clusters" else real(**kwargs)

    monkeypatch.setattr("profwin.discovery.importlib.metadata.entry_points", without_clusters)


@pytest.mark.usefixtures("no_cluster_plugins")
@pytest.mark.parametrize(
    "argv",
    [["collect", "--ray", "--from", "/x/*", "--to", "{tmp}"], ["summarize", "--ray", "/x"], ["summarize", "--ray", "h:1", "/x"]],
)
def test_without_profwin_ray_the_user_is_told_what_to_install(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([a.format(tmp=tmp_path) for a in argv] + ["--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2
    assert out["error"] == "no 'ray' cluster support installed: pip install 'profwin[ray]' (profwin-ray)"
