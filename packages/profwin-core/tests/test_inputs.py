"""Spec files within bounds: size, encoding, nesting, aliases, duplicate keys (real files, real parsers)."""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profwin import ConfigError, Window, load_spec
from profwin.errors import SHOWN_CHARS
from profwin.inputs import MAX_ALIASES, MAX_DEPTH, MAX_NODES, MAX_SPEC_BYTES
from profwin.window import MAX_STEP


def load_error(tmp_path: Path, content: str | bytes, name: str = "spec.yaml") -> str:
    file = tmp_path / name
    if isinstance(content, str):
        file.write_text(content, encoding="utf-8")
    else:
        file.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        load_spec(file)
    message = str(info.value)
    assert "\n" not in message
    assert str(file) in message
    return message


def test_alias_bomb_under_options_fails_before_expanding(tmp_path: Path) -> None:
    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    text = "window: '20:80'\noptions:\n  torch:\n" + "".join(f"    {line}\n" for line in levels)
    assert len(text) < 1000  # 9**9 values once expanded
    assert f"more than {MAX_NODES:,} values once aliases are expanded" in load_error(tmp_path, text)


def test_alias_count_is_bounded(tmp_path: Path) -> None:
    text = "x: &x 1\ny: [" + ", ".join(["*x"] * (MAX_ALIASES + 1)) + "]\n"
    assert f"more than {MAX_ALIASES:,} aliases" in load_error(tmp_path, text)


def test_aliases_within_bounds_still_work(tmp_path: Path) -> None:
    file = tmp_path / "spec.yaml"
    file.write_text("base: &w {start: 2, end: 5}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key 'base'"):  # parsed fine; the spec rule speaks
        load_spec(file)
    file.write_text("window: &w {start: 2, end: 5}\n", encoding="utf-8")
    assert load_spec(file).window == Window(2, 5)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.yaml", "a: " + "[" * 100_000 + "]" * 100_000),
        ("deep2.yaml", "a: " + "{b: " * 100_000 + "1" + "}" * 100_000),
        ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ],
)
def test_deep_nesting_is_a_clear_error_not_a_recursion_error(tmp_path: Path, name: str, text: str) -> None:
    assert f"nested deeper than {MAX_DEPTH} levels" in load_error(tmp_path, text, name)


def test_nesting_through_aliases_counts_expanded(tmp_path: Path) -> None:
    half = MAX_DEPTH // 2 + 1
    text = "a: &a " + "[" * half + "]" * half + "\nb: " + "[" * half + "*a" + "]" * half + "\n"
    assert "once aliases are expanded" in load_error(tmp_path, text)


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "window: '1:2'\noptions: &o {torch: {x: *o}}\n", "&r {a: [1, {b: *r}]}\n"])
def test_a_node_that_holds_itself_is_a_clear_error_not_a_recursion_error(tmp_path: Path, text: str) -> None:
    """PyYAML composes ``a: &a [*a]`` into a node that contains itself (the anchor is known while
    its own node is composed): measuring it followed the cycle until Python's stack ran out."""
    assert "holds itself through an alias, so it would expand without end" in load_error(tmp_path, text)


def test_size_bound_reads_only_bound_plus_one_bytes(tmp_path: Path) -> None:
    assert f"larger than {MAX_SPEC_BYTES:,} bytes" in load_error(tmp_path, "#" * (MAX_SPEC_BYTES + 1))


def test_dev_zero_fails_fast_in_the_cli() -> None:
    done = subprocess.run([sys.executable, "-m", "profwin", "validate", "/dev/zero"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2  # an unreadable file is an error (cli.md), not a spec found wrong (1)
    assert "profwin: error: cannot read spec file '/dev/zero': it is a character device" in done.stderr
    assert MAX_SPEC_BYTES  # the size bound is for regular files; a device is refused before any read


def test_a_fifo_without_a_writer_fails_instead_of_hanging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr("profwin.inputs.FIFO_IDLE_S", 0.5)
    with pytest.raises(ConfigError, match=r"it is a FIFO or pipe and nothing was written to it for 0.5 s"):
        load_spec(fifo)


@pytest.mark.parametrize("kind", ["directory", "socket"])
def test_directories_and_sockets_are_refused_by_type(tmp_path: Path, kind: str) -> None:
    import socket

    path = tmp_path / "spec"
    if kind == "directory":
        path.mkdir()
        with pytest.raises(ConfigError, match="it is a directory"):
            load_spec(path)
        return
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(ConfigError, match=r"No such device or address|it is a socket"):
            load_spec(path)


def test_a_fifo_is_read_within_the_bound(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'w').write('window: \"3:7\"\\n')"])
    try:
        assert load_spec(fifo).window == Window(3, 7)
    finally:
        writer.wait(timeout=30)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("window: '1:2'".encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
        (b"window: '1:2'\n\xff\xfe\x00garbage", "is not UTF-8 text (byte b'\\xff' at offset 14)"),
    ],
)
def test_undecodable_bytes(tmp_path: Path, content: bytes, expected: str) -> None:
    assert expected in load_error(tmp_path, content)


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    file = tmp_path / "spec.yaml"
    file.write_bytes(codecs.BOM_UTF8 + b"window: '4:6'\n")
    assert load_spec(file).window == Window(4, 6)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("spec.json", '{"window": "1:2", "prefix": "a", "window": "3:4"}', "duplicate key 'window' in one object"),
        ("spec.yaml", "window: '1:2'\nprefix: a\nwindow: '3:4'\n", "(line 3, column 1): duplicate key 'window'"),
        ("spec.json", '{"window": {"start": NaN}}', "NaN is not a JSON number"),
        ("spec.json", '{"window": {"end": -Infinity}}', "-Infinity is not a JSON number"),
    ],
)
def test_duplicate_keys_and_non_numbers_are_refused(tmp_path: Path, name: str, text: str, expected: str) -> None:
    assert expected in load_error(tmp_path, text, name)


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    file = tmp_path / "spec.yaml"
    file.write_text("window: &w {start: 1, end: 9}\noptions:\n  torch: {<<: {format: json}, format: json.gz}\n", encoding="utf-8")
    assert load_spec(file).options["torch"]["format"] == "json.gz"


def test_unknown_user_in_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such user's home directory"):
        load_spec("~profwin_no_such_user_xyz/spec.yaml")
    with pytest.raises(
        ConfigError,
        match=r"^output_dir: '~profwin_no_such_user_xyz/t' starts with '~profwin_no_such_user_xyz', but there is no such user",
    ):
        load_spec({"output_dir": "~profwin_no_such_user_xyz/t"})


def test_window_bounds_have_an_upper_limit_and_long_values_are_cut() -> None:
    assert Window(MAX_STEP - 1, MAX_STEP).length == 1
    for bad in (lambda: Window(0, MAX_STEP + 1), lambda: Window(10**30), lambda: Window.parse("1:" + "9" * 5000)):
        with pytest.raises(ConfigError, match=rf"must be <= {MAX_STEP}") as info:
            bad()
        assert len(str(info.value)) < 2 * SHOWN_CHARS + 100
    with pytest.raises(ConfigError, match=r"characters\)") as info:
        Window.parse("x" * 5000)
    assert len(str(info.value)) < 2 * SHOWN_CHARS + 150
    assert Window.parse(f"00000000000000000001:{MAX_STEP}") == Window(1, MAX_STEP)
