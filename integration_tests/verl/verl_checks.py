"""Checks that need verl 0.9.1 itself, run in its environment: ``python verl_checks.py NAME``.

Each prints one JSON document that test_verl_real.py asserts on: profwin reading verl's real
dataclasses and its shipped YAML files, and ``profwin_verl.enable()`` on verl's real modules.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import verl
from omegaconf import OmegaConf
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.profiler.config import (
    NPUToolConfig,
    PrecisionDebuggerToolConfig,
    ProfilerConfig,
    TorchMemoryToolConfig,
    TorchProfilerToolConfig,
)
from verl.utils.profiler.profile import build_rollout_dist_profiler

import profwin
import profwin_verl

CONFIG_DIR = Path(verl.__file__).parent / "trainer" / "config"
ROLLOUT = "actor_rollout_ref.rollout.profiler"
ACTOR = "actor_rollout_ref.actor.profiler"
# What a user adds to verl's generated trainer config to profile rollout tokens 20..79 of step 2 and 4.
OVERRIDES = [
    "global_profiler.tool=torch",
    "global_profiler.steps=[2,4]",
    "global_profiler.save_path=prof",
    "actor_rollout_ref.actor.profiler.enable=true",
    "actor_rollout_ref.actor.profiler.ranks=[0,3]",
    "actor_rollout_ref.actor.profiler.tool_config.torch.discrete=true",
    "actor_rollout_ref.actor.profiler.tool_config.torch.contents=[cuda,stack]",
    "actor_rollout_ref.rollout.profiler.tool_config.torch.profile_token_start=20",
    "actor_rollout_ref.rollout.profiler.tool_config.torch.profile_token_end=80",
]


def outcome(read: Any) -> Any:
    """A reading's ``to_dict()``, or the error it raised (type, path, message)."""
    try:
        result = read()
    except Exception as exc:  # every outcome is data here; the test says which are right
        return {"error": type(exc).__name__, "path": getattr(exc, "path", None), "message": str(exc)}
    return result.to_dict() if hasattr(result, "to_dict") else result


def spec_summary(spec: profwin.ProfileSpec) -> dict[str, Any]:
    return {
        "window": str(spec.window),
        "activities": None if spec.activities is None else list(spec.activities),
        "record": list(spec.records()),
        "output_dir": str(spec.output_dir),
        "ranks": spec.ranks if spec.ranks == "all" else list(spec.ranks),
        "options": {k: dict(v) for k, v in spec.options.items()},
    }


def check_yaml() -> dict[str, Any]:
    generated = CONFIG_DIR / "_generated_ppo_trainer.yaml"
    overridden = OmegaConf.merge(OmegaConf.load(generated), OmegaConf.from_dotlist(OVERRIDES))
    tmp = Path(tempfile.mkdtemp(prefix="profwin-verl-yaml-"))
    overridden_file = tmp / "trainer.yaml"
    OmegaConf.save(overridden, overridden_file)  # interpolations kept as text, as in a user's file
    node = OmegaConf.select(overridden, ROLLOUT)
    # verl's own conversion, of the block resolved in its trainer config (alone, its ${oc.select:...}
    # would fall back to their defaults).
    resolved = OmegaConf.create(OmegaConf.to_container(node, resolve=True))
    as_dataclass = omega_conf_to_dataclass(resolved, ProfilerConfig)
    as_dataclass_tool = omega_conf_to_dataclass(resolved.tool_config.torch, TorchProfilerToolConfig)
    cli = subprocess.run(
        [sys.executable, "-m", "profwin", "validate", str(overridden_file), "--at", ROLLOUT, "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    cli_default = subprocess.run(
        [sys.executable, "-m", "profwin", "validate", str(generated), "--at", ROLLOUT],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return {
        "shipped": {
            "trainer_rollout": outcome(lambda: profwin_verl.load_verl(generated, at=ROLLOUT)),
            "trainer_actor": outcome(lambda: profwin_verl.load_verl(generated, at=ACTOR)),
            "trainer_global": outcome(lambda: profwin_verl.load_verl(generated, at="global_profiler")),
            "trainer_whole": outcome(lambda: profwin_verl.load_verl(generated)),
            "profiler_yaml": outcome(lambda: profwin_verl.load_verl(CONFIG_DIR / "profiler" / "profiler.yaml")),
            "rollout_yaml": outcome(lambda: profwin_verl.load_verl(CONFIG_DIR / "rollout" / "rollout.yaml", at="profiler")),
            "load_spec_rollout": outcome(lambda: spec_summary(profwin.load_spec(generated, at=ROLLOUT))),
            "bad_at": outcome(lambda: profwin_verl.load_verl(generated, at="actor_rollout_ref.rollout.profilr")),
        },
        "overridden": {
            "file": outcome(lambda: profwin_verl.load_verl(overridden_file, at=ROLLOUT)),
            "actor": outcome(lambda: profwin_verl.load_verl(overridden_file, at=ACTOR)),
            "dictconfig_node": outcome(lambda: profwin_verl.load_verl(node)),
            "verl_dataclass": outcome(lambda: profwin_verl.load_verl(as_dataclass)),
            "verl_dataclass_tool_config_type": type(as_dataclass.tool_config).__name__,
            "verl_tool_dataclass": outcome(lambda: spec_summary(profwin_verl.spec_from_verl(as_dataclass_tool))),
            "load_spec": outcome(lambda: spec_summary(profwin.load_spec(overridden_file, at=ROLLOUT))),
            "cli": {"rc": cli.returncode, "stdout": cli.stdout, "stderr": cli.stderr},
            "cli_default": {"rc": cli_default.returncode, "stdout": cli_default.stdout, "stderr": cli_default.stderr},
        },
    }


def check_dataclasses() -> dict[str, Any]:
    torch_tool = TorchProfilerToolConfig(contents=["cuda"], profile_token_start=3, profile_token_end=9, discrete=True)
    listconfig_tool = OmegaConf.create({"torch": {"contents": ["cuda"], "discrete": True}})
    cases = {
        "torch_tool": lambda: spec_summary(profwin_verl.spec_from_verl(torch_tool)),
        "torch_tool_stack_only": lambda: spec_summary(profwin_verl.spec_from_verl(TorchProfilerToolConfig(contents=["stack"]))),
        "npu_tool": lambda: spec_summary(profwin_verl.spec_from_verl(NPUToolConfig(contents=["npu", "module"], level="level1"))),
        "npu_tool_empty": lambda: spec_summary(profwin_verl.spec_from_verl(NPUToolConfig())),
        "memory_tool": lambda: spec_summary(profwin_verl.spec_from_verl(TorchMemoryToolConfig(trace_alloc_max_entries=5000))),
        "default_profiler": lambda: profwin_verl.load_verl(ProfilerConfig()),
        "default_profiler_spec": lambda: spec_summary(profwin_verl.spec_from_verl(ProfilerConfig())),
        "disabled": lambda: profwin_verl.load_verl(
            ProfilerConfig(tool="torch", enable=False, save_path="p", tool_config={"torch": torch_tool})
        ),
        "tool_null": lambda: profwin_verl.load_verl(ProfilerConfig(tool=None, enable=True, save_path="p", tool_config={})),
        "enabled": lambda: profwin_verl.load_verl(
            ProfilerConfig(tool="torch", enable=True, ranks=[2, 9], save_path="p", tool_config={"torch": torch_tool})
        ),
        "dictconfig_tool_config": lambda: profwin_verl.load_verl(
            ProfilerConfig(tool="torch", enable=True, save_path="p", tool_config=listconfig_tool)
        ),
        "memory_profiler": lambda: profwin_verl.load_verl(
            ProfilerConfig(tool="torch_memory", enable=True, save_path="p", tool_config={"torch_memory": TorchMemoryToolConfig()})
        ),
        "nsys": lambda: profwin_verl.load_verl(ProfilerConfig(tool="nsys", enable=True, save_path="p", tool_config={})),
        "precision_debugger": lambda: profwin_verl.load_verl(
            ProfilerConfig(
                tool="precision_debugger",
                enable=True,
                save_path="p",
                tool_config={"precision_debugger": PrecisionDebuggerToolConfig()},
            )
        ),
    }
    return {name: outcome(read) for name, read in cases.items()}


def check_patch() -> dict[str, Any]:
    import verl.utils.profiler as verl_profiler
    import verl.utils.profiler.config as verl_config

    originals = {name: getattr(verl_config, name) for name in profwin_verl.NAMES}
    try:
        importlib.import_module("verl.workers.rollout.vllm_rollout.vllm_async_server")
        server_import = "ok"
    except Exception as exc:  # verl refuses to import its vLLM server without vLLM: shown, not hidden
        server_import = f"{type(exc).__name__}: {exc}"
    first = profwin_verl.enable()
    holders = {
        f"{module.__name__}.{name}": getattr(module, name) is getattr(profwin_verl, name)
        for module in (verl_config, verl_profiler)
        for name in profwin_verl.NAMES
    }
    # A verl module imported after enable() takes the names from verl.utils.profiler.config.
    late = {}
    exec("from verl.utils.profiler.config import build_sglang_profiler_args as late", {}, late)
    second = profwin_verl.enable()
    restored = profwin_verl.disable()
    back = all(getattr(verl_config, n) is originals[n] and getattr(verl_profiler, n) is originals[n] for n in profwin_verl.NAMES)
    real_version = verl.__version__
    # Another release: verl's metadata says 0.10.0 (a dist-info first on the path), its code is 0.9.1's.
    shadow = Path(tempfile.mkdtemp()) / "verl-0.10.0.dist-info"
    shadow.mkdir()
    (shadow / "METADATA").write_text("Metadata-Version: 2.1\nName: verl\nVersion: 0.10.0\n")
    sys.path.insert(0, str(shadow.parent))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            refused = {"result": profwin_verl.enable(), "warnings": [str(w.message) for w in caught]}
        forced = profwin_verl.enable(force=True)
    finally:
        sys.path.remove(str(shadow.parent))
        profwin_verl.disable()
    # The one-line adoption: verl imports the module named in VERL_USE_EXTERNAL_MODULES itself.
    autopatch = subprocess.run(
        [sys.executable, "-c", "import verl.utils.profiler as p, profwin_verl as w; "
         "print(all(getattr(p, n) is getattr(w, n) for n in w.NAMES))"],
        env={**os.environ, "VERL_USE_EXTERNAL_MODULES": "profwin_verl.autopatch"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return {
        "verl": real_version,
        "autopatch": autopatch.stdout.strip() or autopatch.stderr[-2000:],
        "server_import": server_import,
        "first": first,
        "holders": holders,
        "late_import_is_profwin": late["late"] is profwin_verl.build_sglang_profiler_args,
        "second": second,
        "restored": restored,
        "back": back,
        "refused": refused,
        "forced": forced,
    }


def check_vllm_args(start: str, end: str, save_path: str) -> dict[str, Any]:
    """What each side's builder gives verl's vLLM server (vLLM >= 0.13: legacy_env=False) for one
    rollout window; replica 0 is verl's, replica 1 profwin's, so their traces land apart. With the
    warnings profwin's builder gave (``profwin_warnings``)."""
    tool = TorchProfilerToolConfig(contents=[], discrete=True, profile_token_start=int(start), profile_token_end=int(end))
    profiler = ProfilerConfig(tool="torch", enable=True, save_path=save_path, tool_config={"torch": tool})
    from verl.utils.profiler import config as verl_config

    verl_args = verl_config.build_vllm_profiler_args(profiler, tool, 0, legacy_env=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profwin_args = profwin_verl.build_vllm_profiler_args(profiler, tool, 1, legacy_env=False)
    return {
        "verl": verl_args,
        "profwin": profwin_args,
        "profwin_warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
    }


def check_autopatch_unsupported(workdir: str) -> dict[str, Any]:
    """``VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch`` with a verl profwin does not support: a
    copy of the real verl package whose version file and installed metadata (a dist-info beside
    it) say 0.10.0, first on the path."""
    import shutil

    copy = Path(workdir) / "verl"
    shutil.copytree(Path(verl.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "version" / "version").write_text("0.10.0\n")
    (Path(workdir) / "verl-0.10.0.dist-info").mkdir()
    (Path(workdir) / "verl-0.10.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: verl\nVersion: 0.10.0\n")
    code = (
        "import json, verl, verl.utils.profiler.config as c, profwin_verl as w; "
        "print(json.dumps({'verl': verl.__version__, 'unpatched': all(getattr(c, n) is not getattr(w, n) for n in w.NAMES)}))"
    )
    env = {**os.environ, "VERL_USE_EXTERNAL_MODULES": "profwin_verl.autopatch"}
    env["PYTHONPATH"] = os.pathsep.join([workdir, env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    return {
        "rc": proc.returncode,
        "stdout": json.loads(proc.stdout) if proc.returncode == 0 else proc.stdout,
        "warnings": [line for line in proc.stderr.splitlines() if "profwin" in line and "Warning" in line],
        "traceback": "Traceback" in proc.stderr,
    }


def check_no_window(save_path: str) -> dict[str, Any]:
    """verl's builders and profwin's on a tool block without profile_token_start/end."""
    from verl.utils.profiler import config as verl_config

    tool = TorchProfilerToolConfig(contents=["stack"], discrete=True)
    profiler = ProfilerConfig(tool="torch", enable=True, save_path=save_path, tool_config={"torch": tool})
    result = {}
    for side, module in (("verl", verl_config), ("profwin", profwin_verl)):
        before = dict(os.environ)
        vllm = module.build_vllm_profiler_args(profiler, tool, 0)
        result[side] = {
            "vllm": vllm,
            "vllm_env": {k: v for k, v in os.environ.items() if before.get(k) != v},
            "sglang": module.build_sglang_profiler_args(profiler, tool, 0),
        }
        os.environ.clear()
        os.environ.update(before)
    return result


# Files users write, as verl's docs write them (docs/perf/torch_profiling.md: "rollout & ref follow
# actor settings"): only what they change, over verl's trainer config. Each is read by profwin alone
# and by verl after Hydra's merge onto _generated_ppo_trainer.yaml.
USER_FILES: dict[str, Any] = {
    "docs_end_to_end": {
        "global_profiler": {"steps": [1, 2, 5], "save_path": "./outputs/profile"},
        "actor_rollout_ref": {
            "actor": {
                "profiler": {
                    "enable": True,
                    "all_ranks": True,
                    "tool_config": {"torch": {"discrete": False, "contents": ["cpu", "cuda"]}},
                }
            }
        },
    },
    "docs_discrete": {
        "global_profiler": {"tool": "torch", "steps": [1]},
        "actor_rollout_ref": {
            "actor": {
                "profiler": {
                    "enable": True,
                    "all_ranks": False,
                    "ranks": [0],
                    "tool_config": {"torch": {"discrete": True, "contents": ["cpu", "cuda"]}},
                }
            },
            "rollout": {
                "profiler": {"enable": True, "all_ranks": False, "ranks": [0], "tool_config": {"torch": {"discrete": True}}}
            },
        },
    },
    "rollout_follows_actor": {
        "global_profiler": {"tool": "torch", "steps": [2], "save_path": "/data/prof", "relocate_results": True},
        "actor_rollout_ref": {
            "actor": {
                "profiler": {
                    "enable": True,
                    "ranks": [0, 3],
                    "tool_config": {"torch": {"discrete": True, "contents": ["cpu", "cuda", "stack"]}},
                }
            },
            "rollout": {"profiler": {"tool_config": {"torch": {"profile_token_start": 20, "profile_token_end": 80}}}},
            "ref": {"profiler": {"enable": True}},
        },
        "critic": {"profiler": {"enable": True, "save_path": "critic_prof"}},
    },
    "rollout_own_settings": {
        "global_profiler": {"steps": [3]},
        "actor_rollout_ref": {
            "actor": {"profiler": {"enable": True, "all_ranks": True}},
            "rollout": {"profiler": {"tool": "torch", "enable": False, "ranks": [1], "save_path": "r"}},
        },
    },
    "npu": {
        "global_profiler": {"tool": "npu", "steps": [1]},
        "actor_rollout_ref": {
            "actor": {
                "profiler": {
                    "enable": True,
                    "tool_config": {"npu": {"contents": ["npu", "cpu"], "level": "level1", "discrete": True}},
                }
            },
            "rollout": {"profiler": {"tool_config": {"npu": {"profile_token_start": 4, "profile_token_end": 12}}}},
        },
    },
    "rollout_not_discrete": {
        "global_profiler": {"tool": "torch", "steps": [1]},
        "actor_rollout_ref": {
            "actor": {"profiler": {"enable": True, "tool_config": {"torch": {"contents": ["cpu"]}}}},
            "rollout": {"profiler": {"tool_config": {"torch": {"profile_token_start": 2, "profile_token_end": 6}}}},
        },
    },
    "torch_memory": {
        "global_profiler": {
            "tool": "torch_memory",
            "steps": [1],
            "global_tool_config": {"torch_memory": {"trace_alloc_max_entries": 5000}},
        },
        "actor_rollout_ref": {"actor": {"profiler": {"enable": True}}},
    },
}
ROLE_PATHS = (ACTOR, "actor_rollout_ref.ref.profiler", ROLLOUT, "critic.profiler")


def _at(data: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _verl_reads(composed: Any, path: str) -> dict[str, Any]:
    """A role block of the composed config as verl reads it: its ProfilerConfig and its tool's block."""
    block = OmegaConf.create(OmegaConf.to_container(OmegaConf.select(composed, path), resolve=True))
    config = omega_conf_to_dataclass(block, ProfilerConfig)
    tool_block = dict(block.tool_config.get(config.tool) or {}) if config.tool else {}
    return {
        "tool": config.tool,
        "enable": config.enable,
        "all_ranks": config.all_ranks,
        "ranks": list(config.ranks),
        "save_path": config.save_path,
        "relocate_results": config.relocate_results,
        "discrete": bool(tool_block.get("discrete", False)),
        "contents": list(tool_block.get("contents") or []),
        "window": [tool_block.get("profile_token_start"), tool_block.get("profile_token_end")],
        "trace_alloc_max_entries": tool_block.get("trace_alloc_max_entries"),
        "rollout_server_profiles": _rollout_server_profiles(config) if path == ROLLOUT else None,
    }


def _rollout_server_profiles(config: ProfilerConfig) -> bool:
    """Whether verl's rollout server starts its engine's profiler on replica 0 of 1, decided by
    verl's own code as vllm_async_server.py decides it (its __init__ keeps torch and npu only;
    _should_profile asks the DistProfiler)."""
    if config.tool not in ("torch", "npu"):
        return False
    # verl instantiates the block through its _target_ (Hydra, not installed here): the same class.
    tool_class = {"torch": TorchProfilerToolConfig, "npu": NPUToolConfig}[config.tool]
    tool_config = omega_conf_to_dataclass((config.tool_config or {}).get(config.tool), tool_class)
    # The decision reads enable, the ranks and the tool block's discrete; the profiler behind it is
    # left out (tool=None: verl's no-op one), as the NPU's imports torch_npu, which never runs here.
    unbuilt = dataclasses.replace(config, tool=None)
    controller = build_rollout_dist_profiler(0, 1, config=unbuilt, tool_config=tool_config)
    return bool(controller.check_enable() and controller.check_this_rank() and controller.is_discrete_mode())


def check_composed() -> dict[str, Any]:
    """Each user file read by profwin alone, and by verl merged onto its trainer config."""
    tmp = Path(tempfile.mkdtemp(prefix="profwin-verl-composed-"))
    generated = OmegaConf.load(CONFIG_DIR / "_generated_ppo_trainer.yaml")
    results: dict[str, Any] = {}
    for name, user in USER_FILES.items():
        file = tmp / f"{name}.yaml"
        OmegaConf.save(OmegaConf.create(user), file)
        composed = OmegaConf.merge(generated, OmegaConf.load(file))  # Hydra: the trainer config, then the user's file
        for path in (*ROLE_PATHS, "global_profiler"):
            if _at(user, path) is None:
                continue
            replica0 = outcome(lambda file=file, path=path: profwin_verl.load_verl(file, at=path).profiles_replica(0, 1))
            results[f"{name}:{path}"] = {
                "profwin_replica0": replica0 if path == ROLLOUT else None,
                "profwin": outcome(lambda file=file, path=path: profwin_verl.load_verl(file, at=path)),
                "profwin_composed": outcome(lambda composed=composed, path=path: profwin_verl.load_verl(composed, at=path)),
                "verl": _verl_reads(composed, path) if path != "global_profiler" else None,
            }
    return results


if __name__ == "__main__":
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    checks = {
        "yaml": check_yaml,
        "dataclasses": check_dataclasses,
        "patch": check_patch,
        "vllm_args": check_vllm_args,
        "autopatch_unsupported": check_autopatch_unsupported,
        "no_window": check_no_window,
        "composed": check_composed,
    }
    json.dump(checks[sys.argv[1]](*sys.argv[2:]), sys.stdout, default=str)
