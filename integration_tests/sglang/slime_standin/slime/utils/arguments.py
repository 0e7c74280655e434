"""The lines of slime/utils/arguments.py (624b824, ``slime_validate_args``) that profwin-slime's
settings travel through: every key of the ``--custom-config-path`` YAML is set on ``args``."""

from __future__ import annotations

from typing import Any

import yaml


def apply_custom_config(args: Any) -> Any:
    if args.eval_function_path is None:
        args.eval_function_path = args.rollout_function_path
    if args.custom_config_path:
        with open(args.custom_config_path) as f:
            data = yaml.safe_load(f) or {}
        for k, v in data.items():
            setattr(args, k, v)
    return args
