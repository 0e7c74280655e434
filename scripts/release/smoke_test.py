"""Install one built wheel in a fresh venv outside the checkout and check it works there.

    python scripts/release/smoke_test.py dist/ profwin-vllm

The wheel comes from DIST; its dependencies come from the index, as they will for users (so a
plugin that needs an unreleased profwin-core fails here: release core first; to try it locally
with sibling wheels, set PIP_FIND_LINKS=dist). Checks: every
top-level package of the wheel imports from the venv, and ``profwin plugins --json`` lists each
entry point of the wheel from this distribution and version, none ``failed`` or ``incompatible``.
"""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise SystemExit(f"smoke test failed: {message}")


def _declared_plugins(entry_points_txt: str) -> list[str]:
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # entry-point names keep their case
    parser.read_string(entry_points_txt)
    listed = ("profwin.backends", "profwin.profilers", "profwin.clusters", "profwin.commands")  # what `profwin plugins` lists
    return [ep for group in parser.sections() if group in listed for ep in parser[group]]


def main() -> int:
    dist, name = Path(sys.argv[1]), sys.argv[2]
    [wheel] = dist.glob(f"{name.replace('-', '_')}-*.whl")
    version = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as zf:
        files = zf.namelist()
        eps_file = next((f for f in files if f.endswith(".dist-info/entry_points.txt")), None)
        declared = _declared_plugins(zf.read(eps_file).decode()) if eps_file else []
    tops = sorted({f.split("/")[0] for f in files if f.endswith(".py") and "/" in f})

    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python, profwin = str(venv / "bin" / "python"), str(venv / "bin" / "profwin")

        def run(*args: str) -> str:
            # cwd is the temporary directory and -I is used for imports: nothing comes from the checkout.
            return subprocess.run(args, cwd=tmp, capture_output=True, text=True, check=True).stdout

        subprocess.run([python, "-m", "pip", "install", "--quiet", str(wheel)], check=True, cwd=tmp)
        for top in tops or ["profwin"]:  # the umbrella has no code: the core it installs must import
            where = run(python, "-I", "-c", f"import {top}; print({top}.__file__)").strip()
            _check(where.startswith(str(venv)), f"{top} imported from {where}, not from the fresh venv")
            print(f"ok: import {top} ({where})")
        listed = {p["name"]: p for p in json.loads(run(profwin, "plugins", "--json")) if p["distribution"] == name}
        for ep in declared:
            info = listed.get(ep)
            _check(info is not None, f"profwin plugins does not list {ep} from {name}")
            assert info is not None
            _check(info["version"] == version, f"{ep} is listed with version {info['version']}, the wheel is {version}")
            _check(info["status"] not in ("failed", "incompatible"), f"{ep}: {info['status']} ({info['detail']})")
            print(f"ok: plugin {ep} {info['version']} {info['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
