"""profwin-openrlhf's launcher on an OpenRLHF it does not support: one warning, OpenRLHF left alone.

Run by test_openrlhf.py with the OpenRLHF environment's python and, first on PYTHONPATH, a folder
holding ``openrlhf-0.10.4.dist-info``: the metadata of another OpenRLHF release over the real
0.11.2 code (a stand-in for an installed OpenRLHF of another series; installing one beside the
other is not possible, and profwin reads the version from the metadata, as pip's tools do).
``python unsupported.py <report.json>``.

The launcher runs ``python -m profwin_openrlhf.train_ppo_ray --profwin.rollouts 1 --profwin.spec
2:6 --help``: after its warning it hands the rest of the command line to OpenRLHF's
``openrlhf.cli.train_ppo_ray``, whose import of its training stack (peft, DeepSpeed, which this
rollout-only environment leaves out) ends the run here; what is reported is everything profwin did
before that hand-over, and the hand-over itself.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import traceback
import warnings
from pathlib import Path


def main(report_path: Path) -> None:
    import ray
    from openrlhf.trainer.ppo_utils import samples_generator
    from openrlhf.trainer.ray import vllm_engine

    from profwin_openrlhf.train_ppo_ray import main as launch

    originals = {
        "actor": vllm_engine.RolloutRayActor,
        "init": ray.init,
        "generate": samples_generator.SamplesGenerator.generate_samples,
    }
    meta_path = list(sys.meta_path)
    handed = ""
    frames: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            launch(["--profwin.rollouts", "1", "--profwin.spec", "2:6", "--help"])
        except BaseException as exc:  # OpenRLHF's own main: its training stack's import, here
            handed = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            frames = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    report = {
        "version": importlib.metadata.version("openrlhf"),
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught if "profwin" in str(w.message)],
        "actor_untouched": vllm_engine.RolloutRayActor is originals["actor"],
        "ray_init_untouched": ray.init is originals["init"],
        "generate_untouched": samples_generator.SamplesGenerator.generate_samples is originals["generate"],
        "meta_path_untouched": sys.meta_path == meta_path,
        "argv_handed": sys.argv[1:],
        "handed": handed,
        "openrlhf_main_ran": any(f.endswith("openrlhf/cli/train_ppo_ray.py") for f in frames),
    }
    report_path.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
