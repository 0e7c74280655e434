"""Every command, driven with a battery of bad inputs: each answer is a clear error or a result,
never "internal error" (which is for profwin's own bugs), never a traceback, never a hang, and
every line it prints is bounded. Real files, FIFOs, devices and sockets in ``tmp_path``; the
commands run in this process through their ``main`` (what ``profwin`` and ``profwin-memory`` run).
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import socket
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from profwin.cli import main as profwin_main
from profwin_memory.cli import main as memory_main

BIG = "9" * 5000
ZEROS = "0" * 5000 + "5"
MAX_LINE = 2000


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Hostile inputs on disk, by name."""
    monkeypatch.setattr("profwin.inputs.FIFO_IDLE_S", 0.3)
    made: dict[str, str] = {}

    def put(name: str, data: bytes) -> None:
        (tmp_path / name).write_bytes(data)
        made[name] = str(tmp_path / name)

    put("big-int.yaml", f"window: '1:2'\nprefix: x\noptions:\n  torch:\n    format: {BIG}\n".encode())
    put("big-int.json", f'{{"window": "1:2", "prefix": {BIG}}}'.encode())
    put("deep.json", b"[" * 100_000 + b"]" * 100_000)
    put("binary.yaml", bytes(range(256)) * 10)
    put("alias-cycle.yaml", b"window: '1:2'\noptions: &o {torch: {x: *o}}\n")
    put("ansi.yaml", b"window: '1:2'\nprefix: \"\\e[31mred\"\nbogus\x1b[2J: 1\n")
    put("trace.json", b'{"traceEvents": [{"ph": "X", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}')
    put("garbage.pickle", pickle.dumps({"segments": 5, "device_traces": [[{"action": "alloc", "size": "x"}]]}))
    put("bad.memory_timeline.json", json.dumps({"format": "profwin.memory-timeline", "steps": 1, "totals": 5}).encode())
    put("nan.memory_timeline.json.gz", gzip.compress(b'{"format": "profwin.memory-timeline", "totals": NaN}'))
    os.mkfifo(tmp_path / "fifo")
    made["fifo"] = str(tmp_path / "fifo")
    made["dir"] = str(tmp_path)
    made["missing"] = str(tmp_path / "missing.json")
    made["dev-zero"] = "/dev/zero"
    made["dev-mem"] = "/proc/self/mem"  # opens and seeks, then its first read fails (EIO)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    made["socket"] = str(tmp_path / "sock")
    state_out = tmp_path / "out"
    (state_out / ".profwin-state").mkdir(parents=True)
    (state_out / ".profwin-state" / "vllm-127_0_0_1_1.json").write_text("[" * 100_000 + "]" * 100_000)
    made["state-out"] = str(state_out)
    made["out"] = str(tmp_path / "written")
    return made


def cases(f: dict[str, str]) -> list[tuple[str, Callable[[Sequence[str]], int], list[str]]]:
    p, m = profwin_main, memory_main
    url = ["--engine", "vllm", "--url", "127.0.0.1:1", "--timeout", "2"]
    spec_files = ["big-int.yaml", "big-int.json", "deep.json", "binary.yaml", "alias-cycle.yaml", "ansi.yaml", "fifo", "dir", "missing",
                  "dev-zero", "dev-mem", "socket"]  # fmt: skip
    battery: list[tuple[str, Callable[[Sequence[str]], int], list[str]]] = []
    for name in spec_files:
        battery += [
            (f"validate {name}", p, ["validate", f[name]]),
            (f"validate --json {name}", p, ["validate", f[name], "--json"]),
            (f"args --spec {name}", p, ["args", "vllm", "--spec", f[name]]),
            (f"summarize {name}", p, ["summarize", f[name]]),
            (f"diff {name}", p, ["diff", f[name], f["trace.json"], "--json"]),
            (f"trim {name}", p, ["trim", f[name], "--window", "0:1", "-o", f["out"]]),
            (f"timeline {name}", p, ["timeline", f[name], "--json"]),
            (f"memory {name}", m, ["summarize", f[name]]),
            (f"memory --trust {name}", m, ["summarize", f[name], "--trust", "--json"]),
        ]
    battery += [
        ("window huge", p, ["window", f"{BIG}:"]),
        ("window zeros", p, ["window", f"{ZEROS}:{ZEROS}9", "--json"]),
        ("window long text", p, ["window", "x" * 100_000]),
        ("window ansi", p, ["window", "1:\x1b[31m2"]),
        ("window engine version huge", p, ["window", "1:2", "--engine-version", f"vllm={BIG}", "--json"]),
        ("window engine version bad", p, ["window", "1:2", "--engine-version", "vllm"]),
        ("args version huge", p, ["args", "vllm", "--engine-version", BIG]),
        ("args version zeros", p, ["args", "sglang", "--engine-version", f"0.{ZEROS}"]),
        ("args unknown engine", p, ["args", "x" * 5000]),
        ("args bad form", p, ["args", "vllm", "--for", "\x1b[2J"]),
        ("args prefix", p, ["args", "vllm", "--prefix", "../" * 2000]),
        ("start credentials", p, ["start", "--engine", "vllm", "--url", "127.0.0.1:9@admin:hunter2pass"]),
        ("start huge url", p, ["start", "--engine", "vllm", "--url", "h" * 100_000]),
        ("start huge port", p, ["start", "--engine", "vllm", "--url", f"127.0.0.1:{BIG}"]),
        ("start timeout huge", p, [*["start"], *url[:4], "--timeout", "1e300", "--json"]),
        ("start timeout 1e10", p, ["start", *url[:4], "--timeout", "1e10"]),
        ("start refused", p, ["start", *url, "--out", f["out"] + "-start"]),
        ("stop deep state", p, ["stop", *url, "--out", f["state-out"], "--json"]),
        ("start unknown engine", p, ["start", "--engine", "nope", "--url", "h:1", "--json"]),
        ("summarize top huge", p, ["summarize", f["trace.json"], "--top", BIG]),
        ("summarize first-step zeros", p, ["summarize", f["trace.json"], "--first-step", ZEROS]),
        ("summarize plot onto input", p, ["summarize", f["trace.json"], "--plot", f["trace.json"]]),
        ("summarize plot json name", p, ["summarize", f["trace.json"], "--plot", f["out"] + ".json"]),
        ("summarize plot dir", p, ["summarize", f["trace.json"], "--plot", f["dir"]]),
        ("trim onto input", p, ["trim", f["trace.json"], "--window", "0:1", "-o", f["trace.json"]]),
        ("trim window huge", p, ["trim", f["trace.json"], "--window", f"{BIG}:", "-o", f["out"]]),
        ("demo steps huge", p, ["demo", "--steps", BIG, "--json"]),
        ("demo window zeros", p, ["demo", "--window", f"{ZEROS}:", "--steps", "0"]),
        ("unknown flag json", p, ["plugins", "--json", "--nope"]),
        ("unknown argument ansi", p, ["plugins", "\x1b[2J"]),  # argparse quotes it as typed
        ("no command", p, []),
        ("memory bad subcommand", m, ["nope", "--json"]),
        ("memory garbage trusted", m, ["summarize", f["garbage.pickle"], "--trust"]),
        ("memory timeline bad", m, ["summarize", f["bad.memory_timeline.json"], "--json"]),
        ("memory timeline nan", m, ["summarize", f["nan.memory_timeline.json.gz"], "--json"]),
    ]
    return battery


def test_no_bad_input_is_an_internal_error(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    problems = []
    for label, main, argv in cases(files):
        try:
            code = main(argv)
        except SystemExit as exc:  # --help-like exits only; a bad input must come back as a code
            code = -1 if exc.code not in (0, None) else 0
        out, err = capsys.readouterr()
        said = out + err
        if "internal error" in said or "Traceback" in said or code not in (0, 1, 2):
            problems.append(f"{label}: exit {code}: {said[:500]}")
        elif any(len(line) > MAX_LINE for line in said.splitlines()):
            problems.append(f"{label}: a line of {max(len(line) for line in said.splitlines())} characters")
        elif "--json" in argv and out.strip():
            try:
                json.loads(out) if label.startswith(("memory", "window", "validate", "start", "stop", "diff")) else None
            except ValueError:
                problems.append(f"{label}: stdout under --json is not one JSON document: {out[:300]!r}")
        elif "hunter2pass" in said:
            problems.append(f"{label}: echoed a credential")
        elif "\x1b" in err or ("\x1b" in out and "--json" not in argv):
            problems.append(f"{label}: an escape sequence reached the terminal")
    assert not problems, "\n".join(problems)


def test_an_interpolation_bomb_is_refused_before_omegaconf_resolves_it(tmp_path: Path) -> None:
    """Seven lines each repeating the previous one ten times: 100 bytes become 100 MB resolved."""
    lines = ["a: " + "x" * 100]
    for prev, name in zip("abcdef", "bcdefg", strict=True):
        lines.append(f"{name}: " + f"${{{prev}}}" * 10)
    lines += ["spec:", "  window: '1:2'", "  output_dir: ${g}"]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    from profwin import ConfigError, load_spec

    with pytest.raises(ConfigError, match=r"expands past 1,048,576 characters"):
        load_spec(bomb, at="spec")
    fine = tmp_path / "fine.yaml"
    fine.write_text("out: /tmp/x\nspec:\n  window: '1:2'\n  output_dir: ${out}/traces\n")
    assert str(load_spec(fine, at="spec").output_dir) == "/tmp/x/traces"
