"""Discovery cannot be taken down by a plugin: real ``*.dist-info`` test distributions on
``sys.path`` (as in test_plugins_cli.py), listed by ``python -m profwin`` in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HOSTILE = {
    "exits": "import sys\nsys.exit(3)\n",
    "interrupts": "raise KeyboardInterrupt\n",
    "base": "raise BaseException('not even an Exception')\n",
    "prints": "print('hello from a plugin')\nfrom profwin.plugin import PluginSpec\nPLUGIN = PluginSpec(name='prints', kind='backend', target='x:Y')\n",
}


def dist(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def hostile_site(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    for name, code in HOSTILE.items():
        (site / f"hostile_{name}.py").write_text(code)
    entries = "".join(f"{name} = hostile_{name}:PLUGIN\n" for name in HOSTILE)
    dist(site, "hostile", f"[profwin.backends]\n{entries}")
    # A third-party distribution registering the built-in profiler's name.
    (site / "impostor.py").write_text("raise RuntimeError('never imported: shadowed')\n")
    dist(site, "impostor", "[profwin.profilers]\ntorch = impostor:PLUGIN\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), *sys.path]))


def profwin(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profwin", *args], env=env, capture_output=True, text=True, timeout=120)


def test_hostile_plugins_are_failed_and_the_others_listed(hostile_site: dict[str, str]) -> None:
    done = profwin(hostile_site, "plugins", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)  # nothing the plugins printed got into it
    by_name = {(p["name"], p["distribution"]): p for p in listed}
    expected = {
        "exits": "module hostile_exits called sys.exit(3) while being imported",
        "interrupts": "module hostile_interrupts raised KeyboardInterrupt",
        "base": "module hostile_base raised BaseException: not even an Exception",
        "prints": "module hostile_prints printed to stdout while being imported ('hello from a plugin')",
    }
    for name, detail in expected.items():
        assert by_name[name, "hostile"]["status"] == "failed"
        assert by_name[name, "hostile"]["detail"].startswith(detail)
    assert by_name["torch", "profwin-core"]["status"] == "ok"
    assert by_name["memory", "profwin-memory"]["status"] == "ok"


def test_a_shadowing_entry_point_is_visible(hostile_site: dict[str, str]) -> None:
    done = profwin(hostile_site, "plugins", "--json")
    torch = [p for p in json.loads(done.stdout) if p["name"] == "torch"]
    assert sorted(p["distribution"] for p in torch) == ["impostor", "profwin-core"]
    (shadowed,) = [p for p in torch if p["status"] == "shadowed"]
    assert shadowed["distribution"] == "impostor"
    assert "registers 'torch' too, and is profwin's own" in shadowed["detail"]
    done = profwin(hostile_site, "plugins")
    assert "shadowed (impostor:PLUGIN is not used" in done.stdout


def test_a_printing_plugin_stays_failed_on_the_second_listing(hostile_site: dict[str, str]) -> None:
    code = "import profwin; print([p.status for _ in range(2) for p in profwin.plugins() if p.name == 'prints'])"
    done = subprocess.run([sys.executable, "-c", code], env=hostile_site, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "['failed', 'failed']"


def test_unknown_backend_names_the_package_to_install(hostile_site: dict[str, str]) -> None:
    env = dict(hostile_site, PROFWIN_TRACEBACK="")
    code = "import profwin\ntry:\n    profwin.backend('nosuch_vllm')\nexcept profwin.PluginError as e:\n    print(e)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "unknown backend 'nosuch_vllm'" in done.stdout
    assert "pip install" not in done.stdout
    code = "import profwin, profwin.installed as m\nm.entry_points = lambda group: []\ntry:\n    profwin.backend('vllm')\nexcept profwin.PluginError as e:\n    print(e)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == (
        "unknown backend 'vllm'; installed backends: none; install it with: pip install profwin-vllm (or: pip install 'profwin[vllm]')"
    )


def test_plugins_loading_in_two_threads_give_sys_stdout_back() -> None:
    """Two threads load plugins at once (a fan-out's targets each look up markers): each load's
    stdout capture must end before the other's begins, or the second restores the first's
    ``StringIO`` as ``sys.stdout`` for good."""
    import threading
    import time

    from profwin.discovery import _guarded

    stdout = sys.stdout
    inside = threading.Barrier(2, timeout=0.2)

    def slow_load(seconds: float) -> object:
        with contextlib.suppress(threading.BrokenBarrierError):
            inside.wait()  # unserialised, both loads are inside their captures here at once
        time.sleep(seconds)  # the first to start ends first: the second then restores its capture
        return object()

    threads = [threading.Thread(target=_guarded, args=(f"module m{i}", lambda i=i: slow_load(0.02 * (i + 1)))) for i in range(2)]
    threads[0].start()
    time.sleep(0.01)
    threads[1].start()
    for thread in threads:
        thread.join()
    assert sys.stdout is stdout


def _pythons() -> list[str]:
    """This interpreter and every Python 3.12 or later pyenv holds here (the build machines have
    3.12 and 3.13): a missing metadata field read with ``[]`` warns from 3.12 on."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(str(p) for p in root.glob("3.1[2-9]*/bin/python3.1[2-9]"))
    return [sys.executable, *found]


def test_a_distribution_without_an_author_field_is_listed_without_a_warning(hostile_site: dict[str, str]) -> None:
    """``Author`` is optional metadata (the hostile distributions have none, like a wheel whose
    authors have only an email). Python 3.12 warns "Implicit None on return values is deprecated
    and will raise KeyErrors" for ``metadata["Author"]``; on the H200 image's Python 3.12 every
    ``profwin`` command under pytest printed that line once per such plugin."""
    # Another Python takes this environment's packages, not its standard library.
    paths = hostile_site["PYTHONPATH"].split(os.pathsep)
    packages = os.pathsep.join(p for p in paths if p and not p.startswith(sys.base_prefix))
    for python in _pythons():
        env = hostile_site if python == sys.executable else {**hostile_site, "PYTHONPATH": packages}
        done = subprocess.run(
            [python, "-W", "default", "-m", "profwin", "plugins"], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (python, done.stderr)
        assert "hostile" in done.stdout
        assert "Implicit None" not in done.stderr, (python, done.stderr)
