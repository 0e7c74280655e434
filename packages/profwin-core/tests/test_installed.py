"""profwin.installed finds what importlib.metadata finds: the same distributions, versions and entry
points in the same order, on this environment and on folders written to test its rules."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from profwin import installed


def theirs(group: str) -> list[tuple[str, str, str, str, str]]:
    return [
        (ep.group, ep.name, ep.value, ep.dist.metadata["Name"], ep.dist.version)
        for ep in importlib.metadata.entry_points(group=group)
    ]


def ours(group: str) -> list[tuple[str, str, str, str, str]]:
    return [(ep.group, ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in installed.entry_points(group)]


def every_group() -> set[str]:
    return {ep.group for dist in importlib.metadata.distributions() for ep in dist.entry_points}


def test_this_environment_reads_the_same() -> None:
    groups = every_group()
    assert {"profwin.commands", "profwin.backends", "profwin.profilers", "console_scripts"} <= groups
    for group in groups:
        assert ours(group) == theirs(group), group
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        assert installed.version(name) == importlib.metadata.version(name), name


def dist_info(site: Path, folder: str, metadata: str, entry_points: str | None = None) -> None:
    (site / folder).mkdir(parents=True)
    (site / folder / ("PKG-INFO" if folder.endswith(".egg-info") else "METADATA")).write_text(metadata)
    if entry_points is not None:
        (site / folder / "entry_points.txt").write_text(entry_points)


def test_written_folders_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    # Same name, two spellings, two folders: the first on sys.path is the one installed.
    dist_info(first, "Toy_Plugin-2.0.dist-info", "Name: toy-plugin\nVersion: 2.0\n", "[toy.group]\na = toy_a:run\n")
    dist_info(second, "toy.plugin-1.0.dist-info", "Name: toy.plugin\nVersion: 1.0\n", "[toy.group]\nold = toy_old:run\n")
    dist_info(
        second,
        "other-3.1.dist-info",
        "Metadata-Version: 2.1\nName: other\nVersion: 3.1\nAuthor: A\n  folded\n\nName: the body, not a field\n",
        "# a comment\nstray = before:any_section\n[toy.group]\nb=other_b : make [extra]\n\n[other.group]\nc = other_c\n",
    )
    dist_info(second, "legacy.egg-info", "Name: legacy\nVersion: 0.9\n", "[toy.group]\nd = legacy_d:x\n")
    (second / "flat-0.1.egg-info").write_text("Name: flat\nVersion: 0.1\n")  # an egg-info that is a file
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    for group in ("toy.group", "other.group"):
        assert ours(group) == theirs(group), group
    assert sorted(ep.name for ep in installed.entry_points("toy.group")) == ["a", "b", "d"]  # "old" is shadowed
    for name in ("toy-plugin", "TOY_PLUGIN", "other", "legacy", "flat", "absent-thing"):
        try:
            expected: str | None = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            expected = None
        assert installed.version(name) == expected, name
    other = installed.distribution("other")
    assert other is not None
    assert other.field("Author") == "A folded"
    assert other.field("Home-page") is None


def test_a_folder_written_after_a_listing_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed.version("late") is None
    dist_info(tmp_path, "late-1.2.dist-info", "Name: late\nVersion: 1.2\n")
    assert installed.version("late") == "1.2"


def test_a_zip_on_the_path_is_read_by_importlib_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped-4.0.dist-info/METADATA", "Name: zipped\nVersion: 4.0\n")
        z.writestr("zipped-4.0.dist-info/entry_points.txt", "[zip.group]\nz = zipped_mod:f\n")
    monkeypatch.syspath_prepend(str(archive))
    assert installed.version("zipped") == "4.0"
    assert ours("zip.group") == theirs("zip.group") == [("zip.group", "z", "zipped_mod:f", "zipped", "4.0")]


def test_unreadable_metadata_is_no_distribution_and_no_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where importlib.metadata raises (undecodable text; a line without ``=``), nothing is found."""
    dist_info(
        tmp_path, "odd-1.0.dist-info", "Name: odd\nVersion: 1.0\n", "[odd.group]\n; a comment\nno equals sign\nkept = odd:x\n"
    )
    (tmp_path / "bad-1.0.dist-info").mkdir()
    (tmp_path / "bad-1.0.dist-info" / "METADATA").write_bytes(b"Name: bad\nVersion: \xff\n")
    (tmp_path / "bad-1.0.dist-info" / "entry_points.txt").write_bytes(b"[bad.group]\nx = \xff:y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed.version("bad") is None  # importlib.metadata raises UnicodeDecodeError here
    assert installed.entry_points("bad.group") == []
    assert [(ep.name, ep.value) for ep in installed.entry_points("odd.group")] == [("kept", "odd:x")]


def test_load_follows_attributes_and_names_a_bad_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "toy_target.py").write_text("class Outer:\n    inner = 42\n")
    dist_info(
        tmp_path,
        "toy_target-1.0.dist-info",
        "Name: toy-target\nVersion: 1.0\n",
        "[t]\nok = toy_target:Outer.inner\nbad = not a value\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ok, bad = installed.entry_points("t")
    assert (ok.module, ok.load()) == ("toy_target", 42)
    with pytest.raises(ImportError, match="'not a value' is not 'module:attribute'"):
        bad.load()


def test_a_trace_command_does_not_import_importlib_metadata(tmp_path: Path) -> None:
    """Its import is 35 ms of CPU (email, zipfile, csv): a fifth of `profwin summarize` on a small trace."""
    code = "import sys\nfrom profwin.cli import main\ntry:\n    main(['plugins'])\nexcept SystemExit:\n    pass\nprint('importlib.metadata' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines()[-1] == "False"
