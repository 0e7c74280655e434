"""The rules of a copy, without a cluster: what a pattern names on a node, a file that changes
under the copy, whole files only, and what a second run skips. Real files in a temporary folder."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from profwin.plugin import ConfigError
from profwin_ray.files import (
    MANIFEST,
    FileChanged,
    Receiver,
    already_collected,
    check_manifest,
    destination,
    list_files,
    load_manifest,
    pattern_base,
    plain_file,
    read_chunk,
    reported,
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


# -- only regular files under the pattern's folder, never through a link (issue 35, class 6) -----


def test_links_are_never_followed_nor_collected(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shadow").write_bytes(b"secret")
    (outside / "inner.json").write_bytes(b"secret too")
    node = tmp_path / "node"
    (node / "sub").mkdir(parents=True)
    (node / "real.json").write_bytes(b"r")
    (node / "sub" / "deep.json").write_bytes(b"d")
    (node / "shadow.json").symlink_to(outside / "shadow")  # a link to a file elsewhere
    (node / "linked").symlink_to(outside)  # a linked folder under **
    (node / "loop").symlink_to(node)  # a folder linked to itself
    os.mkfifo(node / "fifo.json")
    for pattern in (str(node / "**" / "*"), str(node / "**" / "*.json"), str(node), str(node / "*" / "*.json")):
        names = [f.name for f in list_files(pattern)]
        assert "shadow.json" not in names, pattern
        assert not any(n.startswith(("linked", "loop", "fifo")) for n in names), (pattern, names)
    assert [f.name for f in list_files(str(node / "**" / "*"))] == ["real.json", "sub/deep.json"]
    assert list_files(str(node / "shadow.json")) == []  # named as the pattern itself: still a link


def test_plain_file_goes_nowhere_above_its_folder_nor_through_links(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"f")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert plain_file(tmp_path, "a/f")
    for name in ("link/f", "../x", "a/../a/f", "/etc/passwd", "", "a"):
        assert not plain_file(tmp_path, name), name


def test_a_file_swapped_for_a_link_or_cut_short_under_the_copy_is_said_so(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "elsewhere").write_bytes(b"s" * 3000)
    (file,) = list_files(str(tmp_path / "sub" / "*.gz"))
    stats = os.stat(tmp_path / "sub/b.json.gz")
    (tmp_path / "sub/b.json.gz").unlink()
    (tmp_path / "sub/b.json.gz").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileChanged, match="was replaced during the copy"):
        read_chunk(file, 0, 10)
    (tmp_path / "sub/b.json.gz").unlink()
    (tmp_path / "sub/b.json.gz").write_bytes(b"b" * 3000)
    os.utime(tmp_path / "sub/b.json.gz", ns=(stats.st_atime_ns, stats.st_mtime_ns))
    (file,) = list_files(str(tmp_path / "sub" / "*.gz"))
    assert read_chunk(file, 2000, 2**62) == b"b" * 1000  # never more than the listed file: no 2**62-byte buffer
    assert read_chunk(file, 3000, 1 << 20) == b""


def test_a_node_task_answers_one_line_whatever_it_raised() -> None:
    def changed() -> None:
        raise FileChanged("/data/x changed during the copy (size 1 -> 2)")

    def denied() -> None:
        raise PermissionError(13, "Permission denied", "/data/x")

    def out_of_memory() -> None:
        raise MemoryError

    def bug() -> None:
        raise ValueError("a\nmultiline\nreason")

    assert reported(lambda: 7)() == (True, 7)
    assert reported(changed)() == (False, "/data/x changed during the copy (size 1 -> 2)")
    assert reported(denied)() == (False, "/data/x: Permission denied")
    assert reported(out_of_memory)() == (False, "MemoryError")
    assert reported(bug)() == (False, "ValueError: a multiline reason")
    assert reported(read_chunk).__name__ == "read_chunk"  # what Ray shows


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "symlink", "folder", "damaged"])
def test_the_manifest_is_read_bounded_and_checked_before_any_copy(tmp_path: Path, kind: str) -> None:
    manifest = tmp_path / MANIFEST
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    if kind == "dev-zero":
        manifest.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(manifest)
    elif kind == "symlink":
        manifest.symlink_to(victim)
    elif kind == "folder":
        manifest.mkdir()
    else:
        manifest.write_text('{"node/a": {"sha256": "x", "bytes": "1", "mtime_ns": 2}, "node/b": 5, "node/c": ' + "[" * 100_000)
    assert load_manifest(tmp_path) == {}  # at once: a FIFO is not waited on, /dev/zero not read
    if kind == "damaged":
        check_manifest(tmp_path)  # a regular file: written over at the end
        manifest.write_text(
            '{"node/a": {"sha256": "x", "bytes": "1", "mtime_ns": 2}, "node/b": {"sha256": "y", "bytes": 1, "mtime_ns": 2}}'
        )
        assert load_manifest(tmp_path) == {"node/b": {"sha256": "y", "bytes": 1, "mtime_ns": 2}}
        return
    with pytest.raises(ConfigError, match=r"to: cannot write .*\.profwin-collect\.json'?: it is a"):
        check_manifest(tmp_path)
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize(
    ("planted", "says"),
    [
        ("a link at the file", "is a symbolic link; profwin never writes through one"),
        ("a link at the node's folder", "is a symbolic link; profwin never writes through one"),
        ("a FIFO at the file", "it is a FIFO"),
        ("a file where the node's folder goes", "is not a folder"),
        ("a folder at the file", "it is a directory"),
    ],
)
def test_what_is_planted_in_the_destination_refuses_that_file_only(tmp_path: Path, planted: str, says: str) -> None:
    """A link planted in a collect destination ended the whole collection; it refuses that one
    file (the collection reports it and goes on), and nothing is written through it."""
    dest, secret = tmp_path / "dest", tmp_path / "secret"
    secret.mkdir()
    (secret / "b.json.gz").write_text("keep me")
    (dest / "node").mkdir(parents=True)
    target = dest / "node" / "sub" / "b.json.gz"
    if planted == "a link at the file":
        target.parent.mkdir()
        target.symlink_to(secret / "b.json.gz")
    elif planted == "a link at the node's folder":
        (dest / "node" / "sub").symlink_to(secret)
    elif planted == "a FIFO at the file":
        target.parent.mkdir()
        os.mkfifo(target)
    elif planted == "a file where the node's folder goes":
        (dest / "node" / "sub").write_text("x")
    else:
        target.mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"refused|cannot write") as refused:
        destination(dest, "node/sub/b.json.gz")
    assert says in str(refused.value)
    assert (secret / "b.json.gz").read_text() == "keep me"
    # The same file under another node, or a new name, is fine.
    assert destination(dest, "other/sub/b.json.gz") == dest / "other" / "sub" / "b.json.gz"
    for bad in ("../x", "/etc/passwd", "node/./x", ""):
        with pytest.raises(ConfigError, match="is not a plain name"):
            destination(dest, bad)


def test_a_link_is_never_taken_for_a_file_already_collected(tmp_path: Path) -> None:
    _tree(tmp_path)
    (file,) = list_files(str(tmp_path / "sub" / "*.gz"))
    final = tmp_path / "dest" / "node" / file.name
    final.parent.mkdir(parents=True)
    final.symlink_to(tmp_path / "sub" / "b.json.gz")  # the very content listed, through a link
    assert not already_collected(final, "node/sub/b.json.gz", file, {})


def test_the_manifest_carries_its_version(tmp_path: Path) -> None:
    entry = {"sha256": "y", "bytes": 1, "mtime_ns": 2}
    save_manifest(tmp_path, {"node/b": entry})
    written = json.loads((tmp_path / MANIFEST).read_text())
    assert written == {"format": "profwin.collect-manifest/2", "node/b": entry}
    assert load_manifest(tmp_path) == {"node/b": entry}
    (tmp_path / MANIFEST).write_text(json.dumps({"node/b": entry}))  # version 1: no "format"
    assert load_manifest(tmp_path) == {"node/b": entry}
    (tmp_path / MANIFEST).write_text(json.dumps({"format": "profwin.collect-manifest/3", "node/b": entry}))
    assert load_manifest(tmp_path) == {}  # a newer one is not trusted: each file is checked by its checksum
