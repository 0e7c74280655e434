"""``profwin summarize --ray`` reaches the nodes through the ``Cluster`` contract
(``profwin.plugin.cluster("ray")``, profwin-ray): without profwin-ray the user is told what to
install. (With profwin-ray and a real Ray cluster: integration_tests/ray/.)"""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from profwin.cli import main


@pytest.fixture
def no_cluster_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.entry_points

    def without_clusters(**kwargs: str) -> object:
        return [] if kwargs.get("group") == "profwin.clusters" else real(**kwargs)

    monkeypatch.setattr("profwin.discovery.importlib.metadata.entry_points", without_clusters)


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
