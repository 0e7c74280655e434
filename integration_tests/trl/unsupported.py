"""profwin-trl on a TRL it does not support: one warning, TRL left alone.

Run by test_trl.py with the TRL environment's python and, first on PYTHONPATH, a folder holding
``trl-1.10.0.dist-info``: the metadata of another TRL release over the real 1.16.0 code (a
stand-in for an installed TRL of another series: two cannot be installed side by side, and
profwin reads the version from the metadata, as pip's tools do). ``python unsupported.py <report.json>``.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import warnings
from pathlib import Path


def main(report_path: Path) -> None:
    from trl.generation import vllm_generation

    import profwin_trl

    originals = {"LLM": vllm_generation.LLM, "generate": vllm_generation.VLLMGeneration.generate}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replaced = profwin_trl.enable(profwin_trl.TRLProfiling(rollouts=1, spec="2:6"))
    report = {
        "version": importlib.metadata.version("trl"),
        "replaced": replaced,
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught if "profwin" in str(w.message)],
        "llm_untouched": vllm_generation.LLM is originals["LLM"],
        "generate_untouched": vllm_generation.VLLMGeneration.generate is originals["generate"],
    }
    report_path.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
