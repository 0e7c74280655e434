"""Signed snapshots and the reader that refuses the others.

No CUDA device here, so the snapshots are synthetic dicts in the format documented in
``torch.cuda.memory._snapshot`` (segments, device_traces of TraceEntry dicts with frames),
pickled as ``_dump_snapshot`` does and signed as the CUDA driver does. The real dump is checked
by integration_tests/memory/cuda_check.py on a GPU machine.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

from profwin_memory import STEP_METADATA, UntrustedSnapshotError, load_snapshot, sidecar_path, summarize_snapshot
from profwin_memory.provenance import sign

MIB = 1 << 20


def frame(filename: str, line: int, name: str) -> dict[str, Any]:
    return {"filename": filename, "line": line, "name": name}


USER = frame("/home/u/model.py", 42, "forward")
TORCH = frame("/venv/lib/python3.11/site-packages/torch/nn/functional.py", 7, "linear")


def entry(action: str, size: int, step: int | None = None, frames: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"action": action, "addr": 0x7F00 + size, "size": size, "stream": 0, "frames": frames or []}
    if step is not None:
        e["user_metadata"] = f"{STEP_METADATA}{step}"
    return e


SNAPSHOT = {
    "segments": [{"address": 1, "total_size": 20 * MIB, "allocated_size": 6 * MIB, "blocks": []}],
    "device_traces": [
        [
            entry("segment_alloc", 20 * MIB),
            entry("alloc", 4 * MIB, 20, [TORCH, USER]),
            entry("alloc", 2 * MIB, 21, [USER]),
            entry("free_requested", 4 * MIB),
            entry("free_completed", 4 * MIB),
            entry("alloc", 3 * MIB, 21),
        ]
    ],
}


def write_signed(tmp_path: Path, data: object = SNAPSHOT, name: str = "s.memory_snapshot.pickle") -> Path:
    path = tmp_path / name
    tmp = tmp_path / f".{name}.partial"
    tmp.write_bytes(pickle.dumps(data))
    sign(tmp, final_name=name, details={"steps": "20:22"})
    os.replace(tmp, path)
    return path


def test_a_snapshot_profwin_signed_is_read(tmp_path: Path) -> None:
    path = write_signed(tmp_path)
    assert load_snapshot(path) == SNAPSHOT
    record = json.loads(sidecar_path(path).read_text())
    assert record["file"] == path.name
    assert record["steps"] == "20:22"


def test_summary_counts_growth_steps_and_user_sites(tmp_path: Path) -> None:
    summary = summarize_snapshot(write_signed(tmp_path))
    assert (summary["segments"], summary["reserved_bytes"], summary["allocated_bytes"]) == (1, 20 * MIB, 6 * MIB)
    [dev] = summary["devices"]
    assert dev["actions"] == {"alloc": 3, "free_completed": 1, "free_requested": 1, "segment_alloc": 1}
    assert dev["alloc_bytes"] == 9 * MIB
    assert dev["peak_growth_bytes"] == 6 * MIB  # 4 + 2, then -4, then +3 = 5
    assert dev["end_growth_bytes"] == 5 * MIB
    assert dev["alloc_bytes_per_step"] == {"20": 4 * MIB, "21": 5 * MIB}
    assert dev["top_sites"][0] == {"site": "/home/u/model.py:42 forward", "alloc_bytes": 6 * MIB, "alloc_count": 2}
    assert dev["top_sites"][1]["site"] == "(no stack recorded)"


def test_an_unsigned_pickle_is_refused_before_it_is_unpickled(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.mkdir, (str(marker),))

    path = tmp_path / "evil.memory_snapshot.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "x": Exploit()}))
    with pytest.raises(UntrustedSnapshotError, match="no profwin signature") as info:
        load_snapshot(path)
    assert "unpickling a file runs code" in str(info.value)
    assert "trust=True" in str(info.value)
    assert not marker.exists()


def test_a_signed_pickle_holding_objects_is_still_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.mkdir, (str(marker),))

    path = write_signed(tmp_path, {"segments": [], "x": Exploit()})
    with pytest.raises(UntrustedSnapshotError, match=r"(posix|os)\.mkdir"):
        load_snapshot(path)
    assert not marker.exists()


def test_a_snapshot_changed_after_signing_is_refused(tmp_path: Path) -> None:
    path = write_signed(tmp_path)
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": []}))
    with pytest.raises(UntrustedSnapshotError, match="changed after profwin wrote it"):
        load_snapshot(path)


def test_another_machines_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_signed(tmp_path)
    monkeypatch.setenv("PROFWIN_SNAPSHOT_KEY_FILE", str(tmp_path / "other.key"))
    with pytest.raises(UntrustedSnapshotError, match="no profwin snapshot key"):
        load_snapshot(path)
    (tmp_path / "other.key").write_bytes(os.urandom(32))
    with pytest.raises(UntrustedSnapshotError, match="another user or machine"):
        load_snapshot(path)


def test_a_forged_signature_is_refused(tmp_path: Path) -> None:
    path = write_signed(tmp_path)
    record = json.loads(sidecar_path(path).read_text())
    record["hmac_sha256"] = "0" * 64
    sidecar_path(path).write_text(json.dumps(record))
    with pytest.raises(UntrustedSnapshotError, match="does not match"):
        load_snapshot(path)


def test_trust_reads_an_unsigned_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "other.pickle"
    path.write_bytes(pickle.dumps(SNAPSHOT))
    assert load_snapshot(path, trust=True) == SNAPSHOT
    data = {"segments": [], "device_traces": [], "extra": OrderedDict(a=1)}
    path.write_bytes(pickle.dumps(data))
    assert load_snapshot(path, trust=True) == data  # objects only when the caller vouches


def test_key_is_created_once_and_private(tmp_path: Path, snapshot_key: Path) -> None:
    write_signed(tmp_path, name="a.pickle")
    key = snapshot_key.read_bytes()
    write_signed(tmp_path, name="b.pickle")
    assert snapshot_key.read_bytes() == key
    assert len(key) == 32
    assert snapshot_key.stat().st_mode & 0o777 == 0o600


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profwin_memory", *args], capture_output=True, text=True, env=env, timeout=120)


def test_cli_refuses_then_trusts(tmp_path: Path) -> None:
    path = tmp_path / "foreign.pickle"
    path.write_bytes(pickle.dumps(SNAPSHOT))
    refused = cli("summarize", str(path))
    assert refused.returncode == 1
    assert "refusing" in refused.stderr
    assert "--trust" in refused.stderr
    assert refused.stdout == ""
    trusted = cli("summarize", "--trust", "--json", str(path))
    assert trusted.returncode == 0, trusted.stderr
    assert json.loads(trusted.stdout)["devices"][0]["alloc_bytes"] == 9 * MIB


def test_cli_reads_a_signed_snapshot(tmp_path: Path) -> None:
    path = write_signed(tmp_path)
    done = cli("summarize", str(path))
    assert done.returncode == 0, done.stderr
    assert "/home/u/model.py:42 forward" in done.stdout
    assert "peak growth 6.00 MiB" in done.stdout


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("deep", "is not a readable profwin signature"),
        ("newer", "is a snapshot signature of version 2; this profwin-memory reads version 1 (written by a newer"),
        ("fifo", "is not a readable profwin signature"),
    ],
)
def test_a_damaged_or_newer_signature_is_refused_saying_why(tmp_path: Path, damage: str, says: str) -> None:
    """A signature nested 30,000 deep escaped as a RecursionError; one of a newer version was read
    as if it were this one's; a FIFO there is refused at once."""
    path = write_signed(tmp_path)
    sidecar = sidecar_path(path)
    record = json.loads(sidecar.read_text())
    sidecar.unlink()
    if damage == "deep":
        sidecar.write_text("[" * 30_000 + "]" * 30_000)
    elif damage == "newer":
        sidecar.write_text(json.dumps({**record, "version": 2}))
    else:
        os.mkfifo(sidecar)
    with pytest.raises(UntrustedSnapshotError) as caught:
        load_snapshot(path)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)
