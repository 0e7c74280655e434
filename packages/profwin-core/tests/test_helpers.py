"""The small helpers plugins share: atomic_path, fan_out and installed_version."""

from __future__ import annotations

import threading
from importlib.metadata import version
from pathlib import Path

import pytest

import profwin
from profwin.plugin import fan_out
from profwin.plugin.engines import installed_version
from profwin.plugin.files import atomic_path


def test_atomic_path_renames_on_success_and_removes_on_error(tmp_path: Path) -> None:
    final = tmp_path / "out.json.gz"
    with atomic_path(final, suffix=".gz") as tmp:
        assert tmp.parent == tmp_path
        assert tmp.name.startswith(".out.json.gz.")
        assert tmp.name.endswith(".partial.gz")
        tmp.write_text("done")
    assert final.read_text() == "done"

    def interrupted_write() -> None:
        with atomic_path(tmp_path / "other.json") as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted_write()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json.gz"]


def test_atomic_path_never_writes_through_a_link_planted_at_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone who may write to the folder plants links where profwin would write its hidden
    file: at the name it used to take (``.NAME.PID.partial``, the pid is no secret), and, with the
    random token known, at the very name. Nothing is written through either (issue 35, class 6)."""
    import os

    from profwin.plugin import ConfigError
    from profwin.plugin.files import write_atomic

    victim = tmp_path / "victim"
    victim.write_text("keep me")
    final = tmp_path / "state.json"
    (tmp_path / f".state.json.{os.getpid()}.partial").symlink_to(victim)
    with atomic_path(final) as tmp:
        assert tmp.is_file()  # created here, new and empty
        assert not tmp.is_symlink()
        tmp.write_text("mine")  # a writer that opens the path, as torch's exporter does
    assert final.read_text() == "mine"
    assert victim.read_text() == "keep me"
    monkeypatch.setattr("profwin.atomic.secrets.token_hex", lambda n: "cafe0000")
    planted = tmp_path / f".state.json.{os.getpid()}-cafe0000.partial"
    planted.symlink_to(victim)
    with pytest.raises(ConfigError, match=r"cannot write .*state\.json'?: File exists"):
        write_atomic(final, b"new")
    assert victim.read_text() == "keep me"
    assert planted.is_symlink()  # what someone else put there is left alone
    assert final.read_text() == "mine"


def test_fan_out_runs_concurrently_and_keeps_order() -> None:
    barrier = threading.Barrier(3, timeout=2)  # passes only if all three calls run at once

    def call(i: int) -> int:
        barrier.wait()
        return i * 10

    assert fan_out(call, [3, 1, 2]) == [30, 10, 20]
    assert fan_out(call, []) == []
    assert fan_out(lambda i: i + 1, [4]) == [5]
    with pytest.raises(threading.BrokenBarrierError):
        fan_out(call, [1, 2, 3], max_workers=2)  # two threads cannot meet a barrier of three


def test_installed_version_reads_distributions_and_refuses_names_none_can_have() -> None:
    assert installed_version("no_such_module_xyz", ("no-such-distribution-xyz", "attrs")) == version("attrs")
    assert installed_version("no_such_module_xyz", ("no-such-distribution-xyz",)) is None
    # importlib.metadata raises ValueError for an empty name (found by the bad-arguments catalogue)
    for bad in ("", "-attrs", "a b", "x" * 201):
        with pytest.raises(profwin.ConfigError, match=r"^distributions\[1\]: must be a distribution name"):
            installed_version("no_such_module_xyz", ("attrs", bad))
