"""Under ``--json`` stdout holds exactly one JSON document, whatever runs in the process, and the
exit code says whether the command worked; without it, control characters are escaped.

Plugins here are real ``*.dist-info`` test distributions on ``sys.path`` and every command runs
as a subprocess (``python -m profwin`` / ``python -m profwin_memory``), so what reaches file
descriptor 1 is what a caller's pipe would get.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from profwin.cli_runner import clean_text

NOISY_BACKEND = """
import os
os.write(1, b"garbage from a plugin's import\\n")   # below print(): straight to file descriptor 1
from profwin.plugin import PluginSpec
from profwin.plugin.engines import EnginePlan

PLUGIN = PluginSpec(name="noisy", kind="backend", target="noisy_backend:Noisy", summary="writes to fd 1")


class Noisy:
    name = "noisy"
    default_form = "serve"

    def __init__(self):
        os.write(1, b"more garbage from the constructor\\n")

    def plan(self, spec, *, version=None):
        os.write(1, b"and from plan\\n")
        # A library's own thread printing (Ray's driver prints a node it marked dead so).
        import threading
        chatter = threading.Thread(target=print, args=("garbage printed by another thread",))
        chatter.start()
        chatter.join()
        w = spec.window
        return EnginePlan(engine="noisy", version="1.0", version_source="assumed", mechanism="per-session",
                          window=w, records=w, output_dir=spec.output_dir)

    def target(self, target, *, api_key, timeout):
        raise NotImplementedError
"""

RAISING_BACKEND = """
from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(name="raiser", kind="backend", target="raising_backend:Raiser", summary="plan() raises")


class Raiser:
    name = "raiser"
    default_form = "serve"

    def plan(self, spec, *, version=None):
        raise RuntimeError("the plugin's own bug")
"""

EXITING_BACKEND = """
import sys
from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(name="quitter", kind="backend", target="exiting_backend:Quitter", summary="exits")


class Quitter:
    name = "quitter"
    default_form = "serve"

    def __init__(self):
        sys.exit(0)
"""


@pytest.fixture
def site(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "noisy_backend.py").write_text(NOISY_BACKEND)
    (site / "exiting_backend.py").write_text(EXITING_BACKEND)
    (site / "raising_backend.py").write_text(RAISING_BACKEND)
    info = site / "jsontest-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jsontest\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[profwin.backends]\nnoisy = noisy_backend:PLUGIN\nquitter = exiting_backend:PLUGIN\nraiser = raising_backend:PLUGIN\n"
    )
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), *sys.path]))


def run(env: dict[str, str], *args: str, module: str = "profwin") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], env=env, capture_output=True, text=True, timeout=120)


def one_document(done: subprocess.CompletedProcess[str]) -> object:
    """The single JSON document on stdout (json.loads fails on anything before or after it)."""
    return json.loads(done.stdout)


def test_a_plugin_writing_to_fd_1_cannot_corrupt_json(site: dict[str, str]) -> None:
    for args in (["plugins", "--json"], ["window", "2:5", "--json"], ["args", "noisy", "--json"]):
        done = run(site, *args)
        assert done.returncode == 0, done.stderr
        one_document(done)
        assert "garbage" in done.stderr  # not lost: moved to stderr
    assert "garbage printed by another thread" in done.stderr


def test_another_threads_print_stays_off_stdout_for_people_too(site: dict[str, str]) -> None:
    """Data on stdout, logs on stderr: a library thread's print is not the command's output."""
    done = run(site, "args", "noisy")
    assert done.returncode == 0, done.stderr
    assert "another thread" not in done.stdout
    assert "garbage printed by another thread" in done.stderr


def test_a_backend_calling_sys_exit_is_a_json_error_and_a_non_zero_exit(site: dict[str, str]) -> None:
    done = run(site, "args", "quitter", "--json")
    assert done.returncode == 2
    error = one_document(done)
    assert isinstance(error, dict)
    assert "sys.exit(0)" in error["error"]


def test_a_plugin_whose_plan_raises_is_the_plugins_failure_not_an_internal_error(site: dict[str, str]) -> None:
    done = run(site, "args", "raiser", "--json")
    assert done.returncode == 2
    assert one_document(done) == {
        "error": "backend 'raiser' failed while planning: RuntimeError: the plugin's own bug",
        "path": "",
    }
    done = run(site, "window", "2:5", "--json")
    assert done.returncode == 0
    report = one_document(done)
    assert isinstance(report, dict)
    assert report["backends"]["raiser"] == {"error": "backend 'raiser' failed while planning: RuntimeError: the plugin's own bug"}
    assert "sys.exit(0)" in report["backends"]["quitter"]["error"]  # the others still listed


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["plugins", "--json", "--bogus"], "unrecognized arguments: --bogus"),
        (["summarize", "x.json", "--top", "many", "--json"], "argument --top"),
        (["window", "5:2", "--json"], "argument WINDOW"),
        (["start", "--json", "--engine", "x", "--url", "u", "--timeout", "1e300"], "argument --timeout"),
        (["--json"], "required"),
    ],
)
def test_argparse_errors_are_json_under_json(site: dict[str, str], args: list[str], said: str) -> None:
    done = run(site, *args)
    assert done.returncode == 2
    error = one_document(done)
    assert isinstance(error, dict)
    assert said in error["error"]


@pytest.mark.parametrize(
    ("module", "args", "prog"),
    [
        ("profwin", ["--help", "--json"], "profwin"),
        ("profwin", ["summarize", "--json", "-h"], "profwin summarize"),
        ("profwin_memory", ["summarize", "--help", "--json"], "profwin-memory summarize"),
    ],
)
def test_help_is_one_json_document_under_json(module: str, args: list[str], prog: str) -> None:
    done = run(dict(os.environ), *args, module=module)
    assert done.returncode == 0, done.stderr
    document = one_document(done)
    assert isinstance(document, dict)
    assert document["prog"] == prog
    assert document["usage"].startswith(prog + " ")
    assert document["help"].startswith("usage: " + prog)
    plain = run(dict(os.environ), *[a for a in args if a != "--json"], module=module)
    assert plain.stdout.startswith("usage: " + prog)  # people still get the text


def test_version_is_one_json_document_under_json() -> None:
    done = run(dict(os.environ), "--version", "--json")
    assert done.returncode == 0, done.stderr
    document = one_document(done)
    assert isinstance(document, dict)
    assert document["message"].startswith("profwin ")
    assert "profwin-core" in document["message"]


def test_profwin_memory_bad_subcommand_and_nan_totals(tmp_path: Path) -> None:
    env = dict(os.environ)
    done = run(env, "bogus", "--json", module="profwin_memory")
    assert done.returncode == 2
    assert "invalid choice" in json.loads(done.stdout)["error"]
    timeline = tmp_path / "t.memory_timeline.json.gz"
    body = {"format": "profwin.memory-timeline", "steps": "0:1", "totals": {"alloc_bytes": float("nan")}, "top_ops": []}
    timeline.write_bytes(gzip.compress(json.dumps(body).encode()))  # json.dumps writes a bare NaN
    done = run(env, "summarize", str(timeline), "--json", module="profwin_memory")
    assert done.returncode == 1
    assert "NaN" in json.loads(done.stdout)["error"]


class _Hostile(BaseHTTPRequestHandler):
    """A server whose error detail carries terminal escape sequences."""

    def do_GET(self) -> None:
        body = json.dumps({"detail": "\x1b[2J\x1b[31mboom\x1b[0m\x07"}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


def test_control_characters_are_escaped_for_people_and_kept_exact_in_json(tmp_path: Path) -> None:
    hostile = "op\x1b[31mRED\x1b[0m\x07\r\u009b2J"
    assert clean_text(hostile) == "op\\x1b[31mRED\\x1b[0m\\x07\\r\\x9b2J"
    assert clean_text("two\nlines\tand tab") == "two\nlines\tand tab"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        args = ["start", "--engine", "vllm", "--url", url, "--out", str(tmp_path), "--timeout", "5"]
        done = run(dict(os.environ), *args)
        assert done.returncode == 1
        assert "\x1b" not in done.stdout
        assert "\x07" not in done.stdout
        assert "\\x1b[31mboom" in done.stdout
        done = run(dict(os.environ), *args, "--json")
        [result] = json.loads(done.stdout)
        assert "\x1b[2J\x1b[31mboom\x1b[0m\x07" in result["message"]  # exact in JSON
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_what_a_command_writes_on_stderr_is_escaped_too(tmp_path: Path) -> None:
    # profwin-memory goes on after a file it cannot read, so it prints that error itself; a
    # file name is the user's disk's, and its escape sequences must not reach the terminal.
    hostile = tmp_path / "a\x1b[2Jb"
    hostile.write_bytes(b"x")
    missing = tmp_path / "gone\x1b[31m\x07"
    done = run(dict(os.environ), "summarize", str(hostile), str(missing), module="profwin_memory")
    assert done.returncode == 1
    assert "\x1b" not in done.stderr
    assert "\x07" not in done.stderr
    assert "a\\x1b[2Jb has no profwin signature" in done.stderr
    assert f"cannot read {tmp_path}/gone\\x1b[31m\\x07: no such file" in done.stderr
    done = run(dict(os.environ), "summarize", str(missing), "--json", module="profwin_memory")
    assert json.loads(done.stdout)["path"] == str(missing)  # exact in JSON


def test_a_progress_line_keeps_its_frame_on_stderr(tmp_path: Path) -> None:
    # A progress line is rewritten in place ("\r" first, "\x1b[K" last); only its frame is kept.
    script = (
        "import sys\n"
        "from profwin.plugin.cli import run_cli\n"
        "def main(argv):\n"
        "    sys.stderr.write('\\rreading a\\x1b[2Jb\\r: 50%\\x1b[K')\n"
        "    sys.stderr.write('\\x1b[K\\r')\n"
        "    sys.stderr.write('done\\x1b[K')\n"
        "    return 0\n"
        "sys.exit(run_cli(main, [], prog='p'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 0
    assert done.stderr == b"\rreading a\\x1b[2Jb\\r: 50%\x1b[K\\x1b[K\\rdone\\x1b[K"
