"""The README's and the docs' examples run as written, and name files profwin really writes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
BIN = Path(sys.executable).parent


def blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(), flags=re.DOTALL)


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "USDT:" not in done.stderr  # Kineto kept quiet
    return done


def test_readme_session_example_runs_as_written(tmp_path: Path) -> None:
    (example,) = [b for b in blocks(ROOT / "README.md", "python") if "profwin.Session" in b]
    done = run([sys.executable, "-c", example], tmp_path)
    (trace,) = (tmp_path / "traces").iterdir()
    assert re.fullmatch(r"profwin_rank0_w20-80\.\d+\.pt\.trace\.json\.gz", trace.name)
    assert "'steps': '20:80'" in done.stdout


def test_quickstart_and_traces_commands_name_real_files(tmp_path: Path) -> None:
    run(["profwin", "demo", "--quiet"], tmp_path)
    (quickstart,) = [b for b in blocks(ROOT / "docs" / "quickstart.md", "bash") if "profwin summarize" in b]
    run(["bash", "-euo", "pipefail", "-c", quickstart], tmp_path)
    assert (tmp_path / "small.json.gz").is_file()
    (console,) = [b for b in blocks(ROOT / "docs" / "traces.md", "console") if "profwin trim" in b]
    # The demo ran above; --plot needs the `plot` extra (matplotlib), which the dev venv leaves out.
    lines = [line.removeprefix("$ ") for line in console.splitlines() if "profwin demo" not in line and "--plot" not in line]
    run(["bash", "-euo", "pipefail", "-c", "\n".join(lines)], tmp_path)
    assert (tmp_path / "steps30-40.pt.trace.json.gz").is_file()
