"""``--ray [ADDRESS]`` in core's command-line frame: the optional ADDRESS after ``--ray``, and what
a user typing ``profwin collect`` without profwin-ray is told. (``summarize --ray`` without
profwin-ray: profwin-traces' tests; with profwin-ray and a real Ray cluster: integration_tests/ray/.)"""

from __future__ import annotations

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


def test_without_profwin_ray_collect_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``profwin collect`` is profwin-ray's command (the profwin.commands entry points); core knows
    where it comes from."""
    monkeypatch.setattr("profwin.cli.commands", lambda: {})  # as where profwin-ray is not installed
    assert main(["collect", "--ray", "--from", "/x/*", "--to", str(tmp_path), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == (
        "'profwin collect' comes with profwin-ray, which is not installed: "
        'pip install --find-links dist/ "profwin[ray]" (profwin-ray, with ray; dist/: bash scripts/build_dists.sh dist/)'
    )
