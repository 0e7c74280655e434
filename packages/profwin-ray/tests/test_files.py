"""The rules of a copy, without a cluster: what a pattern names on a node, a file that changes
under the copy, whole files only, and what a second run skips. Real files in a temporary folder."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from profwin_ray.files import (
    FileChanged,
    Receiver,
    already_collected,
    list_files,
    load_manifest,
    pattern_base,
    read_chunk,
    resolve_traces,
    save_manifest,
    summarize_one,
)


def _tree(root: Path) -> None:
    for name, data in {"a.json": b"a" * 10, "sub/b.json.gz": b"b" * 3000, ".hidden": b"h", "sub/.x.partial": b"p"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def test_a_pattern_names_regular_visible_files_relative_to_its_folder(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert pattern_base(str(tmp_path / "**" / "*.json*")) == tmp_path
    assert pattern_base(str(tmp_path)) == tmp_path
    assert pattern_base(str(tmp_path / "a.json")) == tmp_path
    found = list_files(str(tmp_path / "**" / "*"))
    assert [f.name for f in found] == ["a.json", "sub/b.json.gz"]  # hidden files and partials left out, no folders
    assert found[1].sha256 == hashlib.sha256(b"b" * 3000).hexdigest()
    assert [f.name for f in list_files(str(tmp_path))] == ["a.json"]  # a folder: the files directly inside


def test_variables_and_home_are_expanded_on_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    monkeypatch.setenv("PROFWIN_TEST_NODE", str(tmp_path))
    assert [f.name for f in list_files("$PROFWIN_TEST_NODE/*.json")] == ["a.json"]
    found = resolve_traces(["$PROFWIN_TEST_NODE/sub", "/nowhere"])
    assert [(i, size, folder, Path(facts.path).name) for i, size, folder, facts in found] == [(0, 3000, True, "b.json.gz")]
    assert found[0][3].path == str(tmp_path / "sub" / "b.json.gz")  # the node's own path, expanded there


def test_a_file_removed_or_changed_under_the_copy_is_said_so(tmp_path: Path) -> None:
    _tree(tmp_path)
    (file,) = list_files(str(tmp_path / "sub" / "*.gz"))
    assert read_chunk(file, 1000, 1500) == b"b" * 1500
    (tmp_path / "sub/b.json.gz").write_bytes(b"c" * 3001)
    with pytest.raises(FileChanged, match="changed during the copy"):
        read_chunk(file, 0, 10)
    (tmp_path / "sub/b.json.gz").unlink()
    with pytest.raises(FileChanged, match="removed during the copy"):
        read_chunk(file, 0, 10)


def test_a_file_is_renamed_into_place_only_whole_and_with_its_checksum(tmp_path: Path) -> None:
    _tree(tmp_path)
    (file,) = list_files(str(tmp_path / "sub" / "*.gz"))
    dest = tmp_path / "dest" / "node" / file.name
    Receiver(dest, file).write_all([b"b" * 1000, b"b" * 2000])
    assert dest.read_bytes() == b"b" * 3000
    assert dest.stat().st_mtime_ns == file.mtime_ns  # the node's file time is kept (newest session per rank)

    def cut_short():  # the node died after one chunk
        yield b"b" * 1000
        raise RuntimeError("node died")

    other = tmp_path / "dest" / "node" / "other.gz"
    with pytest.raises(RuntimeError, match="node died"):
        Receiver(other, file).write_all(cut_short())
    with pytest.raises(FileChanged, match="it changed during the copy"):
        Receiver(other, file).write_all([b"x" * 3000])
    assert sorted(p.name for p in other.parent.iterdir()) == ["b.json.gz"]  # no partial, no final name


def test_a_second_run_skips_only_the_same_content(tmp_path: Path) -> None:
    _tree(tmp_path)
    (file,) = list_files(str(tmp_path / "sub" / "*.gz"))
    dest = tmp_path / "dest"
    final = dest / "node" / file.name
    Receiver(final, file).write_all([b"b" * 3000])
    info = final.stat()
    save_manifest(dest, {"node/sub/b.json.gz": {"sha256": file.sha256, "bytes": info.st_size, "mtime_ns": info.st_mtime_ns}})
    manifest = load_manifest(dest)
    assert already_collected(final, "node/sub/b.json.gz", file, manifest)
    assert already_collected(final, "unknown/key", file, manifest)  # no record: compared by content
    final.write_bytes(b"z" * 3000)  # changed here since: same size, other content
    os.utime(final, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))
    assert not already_collected(final, "node/sub/b.json.gz", file, manifest)
    assert not already_collected(dest / "node" / "missing", "k", file, manifest)


def test_a_summary_on_the_node_says_what_it_cost_there(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text('{"traceEvents": [{"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}')
    status, reason, cpu_s = summarize_one(str(tmp_path / "t.json"), None, 20, None)
    assert (status, reason) == ("no steps", reason)
    assert reason.startswith("no step markers")
    assert isinstance(cpu_s, float)
    assert cpu_s >= 0.0
    status, _, _ = summarize_one(str(tmp_path / "missing.json"), None, 20, None)
    assert status == "error"
