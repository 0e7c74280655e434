"""``profwin summarize --ray`` reaches the nodes through the ``Cluster`` contract
(``profwin.plugin.cluster("ray")``, profwin-ray): without profwin-ray the user is told what to
install. (With profwin-ray and a real Ray cluster: integration_tests/ray/.)"""

from __future__ import annotations

import json

import pytest

import profwin.installed
from profwin.cli import main


@pytest.fixture
def no_cluster_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    real = profwin.installed.entry_points

    def without_clusters(group: str) -> object:
        return [] if group == "profwin.clusters" else real(group)

    monkeypatch.setattr(profwin.installed, "entry_points", without_clusters)


@pytest.mark.usefixtures("no_cluster_plugins")
@pytest.mark.parametrize(
    "argv",
    [["summarize", "--ray", "/x"], ["summarize", "--ray", "h:1", "/x"]],
)
def test_without_profwin_ray_the_user_is_told_what_to_install(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*argv, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2
    assert out["error"] == "no 'ray' cluster support installed: pip install 'profwin[ray]' (profwin-ray)"
