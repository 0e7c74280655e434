"""Rules of the suite itself and checks that need the whole workspace installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_a_skip_other_than_missing_hardware_fails_the_run(tmp_path: Path) -> None:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    cuda: x\n    npu: x\n")
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n"
        "def test_setup_bug():\n    pytest.skip('could not fetch a tool')\n"
        "@pytest.mark.npu\ndef test_no_npu():\n    pytest.skip('no NPU here')\n"
        "@pytest.mark.cuda\n@pytest.mark.skipif(True, reason='no CUDA device')\ndef test_no_cuda():\n    pass\n"
        "@pytest.mark.xfail(reason='known')\ndef test_known_failure():\n    assert False\n"
        "def test_passes():\n    pass\n"
    )
    (tmp_path / "test_module_skip.py").write_text("import pytest\npytest.importorskip('profwin_no_such_module')\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", str(tmp_path / "test_skips.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout
    assert "1 failed, 1 passed, 2 skipped, 1 xfailed" in done.stdout
    assert "test skipped for a reason other than missing hardware: Skipped: could not fetch a tool" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tmp_path / "test_module_skip.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout
    assert "module skipped for a reason other than missing hardware" in done.stdout


def test_validate_runs_an_installed_plugins_checks(tmp_path: Path) -> None:
    # profwin-npu's own option checks, run by core's `validate` although torch_npu is absent.
    spec = tmp_path / "spec.yaml"
    spec.write_text("window: '1:3'\noptions:\n  npu: {level: level9}\n")
    done = subprocess.run([sys.executable, "-m", "profwin", "validate", str(spec)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "options.npu.level" in done.stderr


def test_validate_checks_backend_options_and_plans(tmp_path: Path) -> None:
    """A block for a plugin that is not installed is an error with a hint; a backend named in
    options also plans the spec, so what `validate` accepts `profwin args` does not reject."""

    def validate(text: str) -> subprocess.CompletedProcess[str]:
        spec = tmp_path / "spec.yaml"
        spec.write_text(text)
        return subprocess.run(
            [sys.executable, "-m", "profwin", "validate", str(spec)], capture_output=True, text=True, timeout=120
        )

    done = validate("window: '1:3'\noptions:\n  vlm: {a: 1}\n")
    assert done.returncode == 1
    assert "options.vlm: no plugin 'vlm'; installed: " in done.stderr
    assert "did you mean 'vllm'?" in done.stderr
    done = validate("window: '1:3'\nactivities: [npu]\noptions:\n  vllm: {gzip: true}\n")
    assert done.returncode == 1
    assert "vLLM has no 'npu' activity" in done.stderr
    done = validate("window: '1:3'\noptions:\n  vllm: {gzip: 1}\n")
    assert "options.vllm.gzip: must be true or false (got 1)" in done.stderr


def test_every_ray_init_of_the_suite_names_its_cluster() -> None:
    """Ray's ``init()`` without an address joins any Ray instance it finds running on the machine
    (Ray 2.60 looks for GCS processes), and then refuses ``num_cpus``: a driver whose test ran beside
    another folder's cluster failed in CI with "When connecting to an existing cluster, num_cpus and
    num_gpus must not be provided". Every driver of the suite says which cluster it means:
    ``address="local"`` (its own) or the address of the one it started."""
    import ast

    unnamed = []
    for path in sorted((ROOT / "integration_tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "init"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ray"
                and not any(k.arg == "address" for k in node.keywords)
            ):
                unnamed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not unnamed, f"ray.init without an address: {unnamed}"
