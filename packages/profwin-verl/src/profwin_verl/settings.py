"""verl's profiler configs read with verl's meaning: :class:`VerlProfiling`, :func:`load_verl`.

verl 0.9.1 spreads one profiling setup over three kinds of block, and this module reads each as
verl does (``verl/utils/profiler/{config,profile}.py``, ``trainer/ppo/ray_trainer.py``):

- the trainer's ``global_profiler`` (``tool``, ``steps``, ``save_path``, ``global_tool_config``);
- a role's ``profiler`` (``actor_rollout_ref.actor.profiler``, ``...rollout.profiler``, ...):
  ``tool``, ``enable``, ``all_ranks``, ``ranks``, ``save_path``, ``tool_config.<tool>``;
- one tool block (``TorchProfilerToolConfig``, ``NPUToolConfig``, ``TorchMemoryToolConfig``).

Any of them may come as verl's dataclasses, OmegaConf nodes, plain dicts or a YAML file with a
dotted path to the block (:mod:`profwin.documents` reads the document). :func:`spec_format` is the
``profwin.spec_formats`` entry point through which :func:`profwin.load_spec` reads verl's blocks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from attrs import frozen

from profwin.plugin import ConfigError, ProfileSpec, ProfilingDisabled, Window, checked, shown, to_json, unknown_key
from profwin.plugin.files import expand_user
from profwin.plugin.trainers import Rollouts, read_document, select

__all__ = [
    "TOOL_PLUGINS",
    "ProfilingDisabled",
    "VerlProfiling",
    "block_kind",
    "load_verl",
    "spec_format",
    "spec_from_verl",
    "verl_spec",
]

_T = TypeVar("_T")

TOOL_PLUGINS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"torch": ("torch", "vllm", "sglang"), "npu": ("npu",), "torch_memory": ("memory",)}
)
"""verl's ``tool`` values profwin drives, and the plugins that record them (torch.profiler in
training workers, the vLLM and SGLang engines' own torch profilers in rollout)."""

_NOT_DRIVEN = {
    "nsys": "Nsight Systems is started by nsys around the worker process (cudaProfilerApi ranges); profwin does not drive it",
    "precision_debugger": "msprobe's precision debugger dumps tensors for accuracy checks; it is not a profiler",
}
_WHOLE_TRAINER = (
    "is a whole verl trainer config: choose a block with at=, e.g. 'actor_rollout_ref.rollout.profiler', "
    "'actor_rollout_ref.actor.profiler' or 'global_profiler'"
)
_EXPECTED = "expected a role profiler block (tool_config), global_profiler (steps) or a tool block (contents)"
_DEFAULT_SAVE_PATH = "outputs/profile"  # verl's global_profiler.save_path default
_MISSING = "???"  # OmegaConf's MISSING: verl's ProfilerConfig() leaves tool/save_path/tool_config so

_ROLE_KEYS = (
    "tool", "enable", "all_ranks", "ranks", "save_path", "tool_config", "global_tool_config", "relocate_results",
    "finish_hook_cmd", "finish_hook_all_ranks", "finish_hook_ranks", "_target_",
)  # fmt: skip
_GLOBAL_KEYS = (
    "tool", "steps", "profile_continuous_steps", "save_path", "relocate_results", "finish_hook_cmd",
    "finish_hook_all_ranks", "finish_hook_ranks", "global_tool_config", "_target_",
)  # fmt: skip
_PROFILER_CONFIG = "verl.utils.profiler.ProfilerConfig"  # the _target_ of role blocks and global_profiler
_TOOL_TARGETS = "verl.utils.profiler.config."  # the _target_ of tool blocks (TorchProfilerToolConfig, ...)

# What a role block of a trainer config leaves out, verl's config fills in from other blocks
# (verl 0.9.1's role configs: ``tool: ${oc.select:global_profiler.tool,null}``, and the rollout's
# ``enable: ${oc.select:actor_rollout_ref.actor.profiler.enable,false}``, ...), so the same file
# means the same here.
_ACTOR, _ROLLOUT = "actor_rollout_ref.actor.profiler", "actor_rollout_ref.rollout.profiler"
_ROLE_BLOCKS = (_ACTOR, "actor_rollout_ref.ref.profiler", _ROLLOUT, "critic.profiler")
_FROM_GLOBAL = {"tool": None, "save_path": _DEFAULT_SAVE_PATH, "relocate_results": False}
_ROLE_DEFAULTS = {"enable": False, "all_ranks": False, "ranks": [], "relocate_results": False}
_FOLLOWS_ACTOR = tuple(_ROLE_DEFAULTS)  # the rollout's, in this order
_FOLLOWS_ACTOR_TOOL = {"torch": ("contents", "discrete"), "npu": ("contents", "level", "analysis", "discrete")}
_MEMORY_SIZES = ("trace_alloc_max_entries", "stack_depth", "memory_snapshot_num_steps")  # from global_tool_config
_ROLLOUT_ONLY = "verl's vLLM and SGLang rollout servers start the engine profiler only"  # verl 0.9.1's *_async_server.py
_OTHER_ROLLOUTS = ("trtllm",)  # rollout.name of verl's servers without that rule (TensorRT-LLM's: no discrete check)
_TRAINING_NPU = {"level": "level0", "analysis": True}  # a training role's npu block (not NPUToolConfig's analysis=False)
_TRAINING_TOOLS, _ROLLOUT_TOOLS = ("torch", "npu", "torch_memory"), ("torch", "npu")  # the tool blocks verl composes

_TOOL_KEYS = {
    "torch": ("contents", "discrete", "profile_token_start", "profile_token_end", "schedule", "name", "_target_"),
    "npu": ("contents", "level", "analysis", "discrete", "profile_token_start", "profile_token_end", "name", "_target_"),
    # context/stacks/kw_args sit in global_tool_config.torch_memory; verl never passes them on.
    "torch_memory": (
        "trace_alloc_max_entries", "stack_depth", "memory_snapshot_num_steps", "context", "stacks", "kw_args", "name",
        "_target_",
    ),
}  # fmt: skip
_CONTENTS = {
    "torch": ("cuda", "cpu", "memory", "shapes", "stack"),
    "npu": ("npu", "cpu", "memory", "shapes", "module", "stack"),
}
_RECORDED = {"memory": "memory", "shapes": "shapes", "stack": "stack", "module": "modules"}


@frozen(kw_only=True)
class VerlProfiling:
    """One verl profiler config, with verl's meaning of every switch.

    Attributes:
        enabled: whether verl would profile anything with it.
        reason: why not, naming the switch (``"enable is false"``); empty when enabled.
        tool: verl's ``tool`` (``torch``, ``npu``, ``torch_memory``) or ``None``.
        plugins: the profwin plugins that record that tool (:data:`TOOL_PLUGINS`).
        spec: what a profiled step records (window, activities, ``save_path``); ``None`` when disabled.
        steps: the trainer steps profiled (``global_profiler.steps``), or ``None`` when the config
            read does not say (a role block read alone: the trainer's ``global_profiler`` decides).
        discrete: the tool block's ``discrete``; verl's vLLM and SGLang rollout servers profile only
            when it is true (the rollout's block read at its place is disabled without it).
        all_ranks, ranks: verl's rank selection. Training roles: ranks are worker ranks. Rollout:
            ranks are global GPU ranks, mapped to replicas (:meth:`profiles_replica`).
        save_path: verl's ``save_path`` as written (relative to the working directory).
        relocate_results: whether :func:`profwin_verl.relocate_rollout_traces` moves rollout traces
            up into ``save_path``.
    """

    enabled: bool
    reason: str = ""
    tool: str | None = None
    plugins: tuple[str, ...] = ()
    spec: ProfileSpec | None = None
    steps: tuple[int, ...] | None = None
    discrete: bool = False
    all_ranks: bool = False
    ranks: tuple[int, ...] = ()
    save_path: str = _DEFAULT_SAVE_PATH
    relocate_results: bool = False

    @property
    def rollouts(self) -> Rollouts | None:
        """The trainer steps profiled as core's rollout selection (each verl step runs one rollout),
        ``None`` when every step is (``steps`` unknown) or none is."""
        return Rollouts(self.steps) if self.steps else None

    def profiles_step(self, step: int) -> bool:
        """Whether trainer step ``step`` is profiled (``steps`` unknown counts as yes)."""
        if not self.enabled:
            return False
        rollouts = self.rollouts
        return self.steps is None or (rollouts is not None and rollouts.chosen(step))

    def profiles_rank(self, rank: int) -> bool:
        """verl's ``DistProfiler`` rule: every rank with ``all_ranks``, else the listed ranks, else rank 0."""
        if not self.enabled:
            return False
        return self.all_ranks or (rank in self.ranks if self.ranks else rank == 0)

    def profiles_replica(self, replica_rank: int, replica_world_size: int) -> bool:
        """verl's ``build_rollout_dist_profiler`` rule: a rollout replica spanning
        ``replica_world_size`` GPUs profiles when it owns one of the global GPU ``ranks``."""
        if not self.enabled:
            return False
        if self.all_ranks or not self.ranks or replica_world_size <= 0:
            return self.profiles_rank(replica_rank)
        return replica_rank in {rank // replica_world_size for rank in self.ranks}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (the spec as its window, activities, records, output_dir, ranks)."""
        return {**to_json(self), "spec": None if self.spec is None else _spec_summary(self.spec)}


def _spec_summary(spec: ProfileSpec) -> dict[str, Any]:
    return {
        "window": str(spec.window),
        "activities": "auto" if spec.activities is None else list(spec.activities),
        "record": list(spec.records()),
        "output_dir": str(spec.output_dir),
        "ranks": spec.ranks if spec.ranks == "all" else list(spec.ranks),
        "options": {name: dict(opts) for name, opts in spec.options.items()},
    }


def block_kind(data: Any, at: str | None = None) -> str | None:
    """Which verl block ``data`` (plain data, found at ``at`` in its document) is: ``trainer``,
    ``global``, ``role``, ``tool``, ``config`` (another of verl's configs), or ``None`` for anything
    else (a profwin spec). At a trainer config's own paths the path says it, whatever the block
    leaves out (``actor_rollout_ref.rollout.profiler: {enable: true}`` is a role block)."""
    if at in _ROLE_BLOCKS:
        return "role"
    if at == "global_profiler":
        return "global"
    if not isinstance(data, Mapping):
        return None
    if "global_profiler" in data or "actor_rollout_ref" in data:
        return "trainer"
    if (set(data) == {"profiler"} and isinstance(data["profiler"], Mapping)) or "tool_config" in data:
        return "role"
    if "steps" in data or "profile_continuous_steps" in data:
        return "global"
    target = data.get("_target_")
    if target == _PROFILER_CONFIG:
        return "role"
    if "contents" in data or "trace_alloc_max_entries" in data or (isinstance(target, str) and target.startswith(_TOOL_TARGETS)):
        return "tool"
    if isinstance(target, str) and target.startswith("verl."):
        return "config"
    return None


@checked
def load_verl(source: Any, *, at: str | None = None, tool: str | None = None) -> VerlProfiling:
    """Read a verl profiler config with verl's meaning.

    ``source`` is a verl dataclass (``ProfilerConfig``, ``TorchProfilerToolConfig``, ...), an
    OmegaConf config, a mapping, or a YAML/JSON file; ``at`` is the dotted path of the block
    (``"actor_rollout_ref.rollout.profiler"``, ``"global_profiler"``). When the document also holds
    ``global_profiler``, a role block takes its ``steps`` from there. ``tool`` overrides the
    block's ``tool`` (to read another ``tool_config`` entry).
    """
    document, _ = read_document(source)
    data = select(document, at)
    kind = block_kind(data, at)
    path = at or ""
    _refuse_unless_block(kind, data, path)
    if kind is None:
        raise ConfigError(f"is not a verl profiler block (keys: {_keys(data)}); {_EXPECTED}", path=path)
    inherited: _Inherited = {}
    if at in _ROLE_BLOCKS and isinstance(data, Mapping):
        data, inherited = _composed(document, at, data)
    elif at == "global_profiler" and isinstance(data, Mapping) and "tool" not in data:
        data, inherited = {**data, "tool": None}, {"tool": (None, False)}
    steps: tuple[int, ...] | None = None
    known_steps = kind == "role" and at is not None and isinstance(document, Mapping) and "global_profiler" in document
    if known_steps:
        global_block = select(document, "global_profiler")
        steps = _steps(global_block.get("steps") if isinstance(global_block, Mapping) else None, "global_profiler.steps")
    rollout = at == _ROLLOUT and _rollout_engine(document) not in _OTHER_ROLLOUTS
    return _read(
        data,
        kind=kind,
        path=path,
        tool=tool,
        enable_default=False,
        steps=steps,
        known_steps=known_steps,
        inherited=inherited,
        rollout=rollout,
    )


def _refuse_unless_block(kind: str | None, data: Any, path: str) -> None:
    """A ConfigError for a document that holds verl's profiler blocks but is none (a trainer
    config, a role's config), naming where they are; for verl's other configs, saying what it is."""
    if kind == "trainer":
        raise ConfigError(_WHOLE_TRAINER, path=path or "at")
    if kind != "config":
        return
    name = data["_target_"].rpartition(".")[2]
    held = [_join(path, key) for key in ("profiler", "global_profiler") if isinstance(data.get(key), Mapping)]
    if held:
        raise ConfigError(f"is verl's {name}, not a profiler block: choose a block with at=, e.g. {held[0]!r}", path=path or "at")
    raise ConfigError(f"is verl's {name}, which holds no profiler block (keys: {_keys(data)}); {_EXPECTED}", path=path)


def _keys(data: Any) -> Any:
    return sorted(data, key=str) if isinstance(data, Mapping) else type(data).__name__


_Inherited = dict[str, tuple[str | None, bool]]
"""What :func:`_composed` filled in: a key (``ranks``, ``tool_config.torch.contents``) -> the path
verl took it from (``None``: verl's own default) and whether the document sets it there."""


def _composed(document: Any, at: str, block: Mapping[str, Any]) -> tuple[dict[str, Any], _Inherited]:
    """The role block at ``at`` of a trainer config with what it leaves out filled in as verl's
    config fills it (its role configs default those keys to other blocks': ``tool:
    ${oc.select:global_profiler.tool,null}``; the rollout's ``enable`` and tool contents follow
    the actor's), and what was filled in from where."""
    filled = {**block}
    inherited: _Inherited = {}

    def take(into: dict[str, Any], key: str, source: Mapping[str, Any], source_path: str, default: Any, rel: str) -> bool:
        if key in into:
            return False
        into[key] = source.get(key, default)
        inherited[rel] = (_join(source_path, key), key in source)
        return True

    tools: Any = filled.get("tool_config")
    if tools is None or tools == _MISSING:
        tools = {}
    if isinstance(tools, Mapping):  # else _tool_block says what it must be
        tools = {name: {**b} if isinstance(b, Mapping) else b for name, b in tools.items()}
        for name in _ROLLOUT_TOOLS if at == _ROLLOUT else _TRAINING_TOOLS:
            tools.setdefault(name, {})
        if at != _ROLLOUT and isinstance(tools["npu"], dict):
            tools["npu"] = {**_TRAINING_NPU, **tools["npu"]}
        filled["tool_config"] = tools
    if at == _ROLLOUT:
        actor, actor_inherited = _composed(document, _ACTOR, _optional(document, _ACTOR))
        for key in _FOLLOWS_ACTOR:
            if take(filled, key, actor, _ACTOR, _ROLE_DEFAULTS[key], key) and key in actor_inherited:
                inherited[key] = actor_inherited[key]  # the actor's own came from global_profiler
        actor_tools = _mapping(actor["tool_config"], _join(_ACTOR, "tool_config"))
        for name, keys in _FOLLOWS_ACTOR_TOOL.items():
            theirs = _mapping(actor_tools.get(name), _join(_ACTOR, f"tool_config.{name}"))
            if isinstance(tools, dict) and isinstance(tools.get(name), dict):
                for key in keys:
                    if key in theirs:
                        take(tools[name], key, theirs, _join(_ACTOR, f"tool_config.{name}"), None, f"tool_config.{name}.{key}")
    global_block = _optional(document, "global_profiler")
    for key, default in _FROM_GLOBAL.items():
        take(filled, key, global_block, "global_profiler", default, key)
    memory = tools.get("torch_memory") if isinstance(tools, dict) else None
    if isinstance(memory, dict):
        where = "global_profiler.global_tool_config.torch_memory"
        shared = _optional(document, where)
        for key in _MEMORY_SIZES:
            if key in shared:
                take(memory, key, shared, where, None, f"tool_config.torch_memory.{key}")
    return filled, inherited


def _optional(document: Any, path: str) -> Mapping[str, Any]:
    """The block at ``path`` as plain data; an empty one where the document has none (verl's
    composed config always has it, with its defaults)."""
    return _mapping(_lookup(document, path), path)


def _rollout_engine(document: Any) -> Any:
    """``actor_rollout_ref.rollout.name``; ``None`` where it is absent or unreadable (verl's own
    trainer config leaves it ``???`` until the user sets it, and checking it is verl's business)."""
    try:
        return _lookup(document, "actor_rollout_ref.rollout.name")
    except ConfigError:
        return None


def _lookup(document: Any, path: str) -> Any:
    """The value at ``path`` as plain data, ``None`` where the document has none."""
    try:
        return select(document, path)
    except ConfigError as exc:
        if exc.path != "at":
            raise
        return None


def _mapping(block: Any, path: str) -> Mapping[str, Any]:
    """``block``, a block another one takes values from: a mapping, or ``{}`` for null."""
    if block is None or block == _MISSING:
        return {}
    if not isinstance(block, Mapping):
        raise ConfigError(f"must be a mapping (got {shown(block)})", path=path)
    return block


@checked
def spec_from_verl(
    block: Any, *, tool: str | None = None, path: str = "", base_dir: str | os.PathLike[str] | None = None
) -> ProfileSpec:
    """The spec a verl profiler block records; :class:`ProfilingDisabled` when verl would profile nothing.

    ``block`` is a role ``profiler`` block, ``global_profiler`` or one tool block, as a verl
    dataclass, an OmegaConf node or a mapping. A block without an ``enable`` key is read as enabled
    (it is asked for what it records); ``enable: false`` and ``tool: null`` are disabled, as in verl.
    ``base_dir``, when given, is where a relative ``save_path`` starts (verl: the working directory).
    """
    data = select(read_document(block)[0], None)
    kind = block_kind(data)
    _refuse_unless_block(kind, data, path)
    result = _read(data, kind=kind or "tool", path=path, tool=tool, enable_default=True, steps=None, known_steps=False)
    return _spec_of(result, path, base_dir)


def verl_spec(document: Any, at: str | None) -> ProfileSpec:
    """:func:`profwin.load_spec` for a verl block: the spec of :func:`load_verl`, or :class:`ProfilingDisabled`."""
    if at is None:
        return spec_from_verl(select(document, None))
    return _spec_of(load_verl(document, at=at), at, None)


def spec_format(document: Any, data: Any, at: str | None) -> ProfileSpec | None:
    """The ``profwin.spec_formats`` entry point: :func:`verl_spec` for a verl block, ``None`` for
    anything else (read by :func:`profwin.load_spec` as a profwin spec)."""
    return None if block_kind(data, at) is None else verl_spec(document, at)


def _spec_of(result: VerlProfiling, path: str, base_dir: str | os.PathLike[str] | None) -> ProfileSpec:
    if result.spec is None:
        raise ProfilingDisabled(f"verl profiles nothing with this config: {result.reason}", path=path)
    if base_dir is not None and not expand_user(result.save_path, what=f"{path}.save_path").is_absolute():
        return result.spec.replace(output_dir=os.path.join(base_dir, result.save_path))
    return result.spec


def _read(
    data: Any,
    *,
    kind: str,
    path: str,
    tool: str | None,
    enable_default: bool,
    steps: tuple[int, ...] | None,
    known_steps: bool,
    inherited: _Inherited | None = None,
    rollout: bool = False,
) -> VerlProfiling:
    """``rollout``: the block is the rollout's, read by verl's vLLM or SGLang rollout server (:data:`_ROLLOUT_ONLY`)."""
    if kind == "role" and set(data) == {"profiler"}:
        data, path = data["profiler"], _join(path, "profiler")
    if not isinstance(data, Mapping):
        raise ConfigError(f"a verl profiler block must be a mapping (got {type(data).__name__})", path=path)
    if tool is not None:
        _check_tool(tool, "tool")  # the caller's own argument, checked as a block's ``tool`` is
    if kind == "tool":
        tool = tool or _tool_of_block(data)
        return _build(tool, data, path, {}, path, enabled=True, reason="", steps=None, paths={})
    # A value filled in from another block is checked where it is written.
    paths = {rel: source for rel, (source, there) in (inherited or {}).items() if source and there}
    valid = _ROLE_KEYS if kind == "role" else _GLOBAL_KEYS
    errors = [unknown_key(key, valid, path=path) for key in data if key not in valid]
    if errors:
        raise ConfigError.combine(errors)
    if kind == "global":
        steps, known_steps = _steps(data.get("steps"), _join(path, "steps")), True
    chosen = tool or data.get("tool", "torch")  # absent: profiler.yaml's default
    reason = ""
    if chosen is None or chosen == _MISSING:
        reason = ("tool is null" if chosen is None else "tool is not set") + _taken("tool", inherited)
    else:
        _check_tool(chosen, paths.get("tool", _join(path, "tool")))
    enable = data.get("enable", enable_default) if kind == "role" else True
    if not isinstance(enable, bool):
        raise ConfigError(f"must be true or false (got {shown(enable)})", path=paths.get("enable", _join(path, "enable")))
    if not reason and not enable:
        reason = "enable is false" + _taken("enable", inherited)
    if not reason and known_steps and not steps:
        reason = "global_profiler.steps is null or empty: verl profiles no trainer step"
    if not reason and rollout and chosen not in _ROLLOUT_TOOLS:
        reason = f"tool is {chosen}: {_ROLLOUT_ONLY} with torch or npu"
    if isinstance(chosen, str) and chosen in TOOL_PLUGINS:
        tool_block, tool_path = _tool_block(data, chosen, kind, path, required=not reason)
        if not reason and rollout and isinstance(tool_block, Mapping) and tool_block.get("discrete", False) is False:
            reason = f"discrete is false{_taken(f'tool_config.{chosen}.discrete', inherited)}: {_ROLLOUT_ONLY} in discrete mode"
        return _build(chosen, tool_block, tool_path, data, path, enabled=not reason, reason=reason, steps=steps, paths=paths)
    return _build(None, {}, path, data, path, enabled=False, reason=reason, steps=steps, paths=paths)


def _taken(key: str, inherited: _Inherited | None) -> str:
    """Where a block's ``key`` came from, when the block leaves it out (:func:`_composed`)."""
    if not inherited or key not in inherited:
        return ""
    source, there = inherited[key]
    if source is None:
        return f": the block sets no {key}, and verl's default is null"
    return f": the block sets no {key}, and verl takes {source}{'' if there else ', which this document does not set either'}"


def _check_tool(chosen: Any, path: str) -> None:
    """``chosen`` names a tool profwin drives; else a ConfigError saying what it is."""
    if isinstance(chosen, str) and chosen in TOOL_PLUGINS:
        return
    if isinstance(chosen, str) and chosen in _NOT_DRIVEN:
        raise ConfigError(f"profwin does not drive tool {chosen!r}: {_NOT_DRIVEN[chosen]}", path=path)
    raise ConfigError(f"must be one of {[*TOOL_PLUGINS, *_NOT_DRIVEN]} or null (got {shown(chosen)})", path=path)


def _tool_of_block(data: Mapping[str, Any]) -> str:
    name = data.get("name")
    if isinstance(name, str) and name in TOOL_PLUGINS:
        return name
    if "trace_alloc_max_entries" in data or "stack_depth" in data:
        return "torch_memory"
    return "npu" if {"level", "analysis"} & set(data) else "torch"


def _tool_block(data: Mapping[str, Any], tool: str, kind: str, path: str, *, required: bool) -> tuple[Any, str]:
    """The tool's block and its path; ``required``: an enabled role block names its tool's block."""
    if kind == "global":
        # Role-less tools read global_tool_config; torch and npu take verl's defaults there.
        configs, where = data.get("global_tool_config") or {}, _join(path, "global_tool_config")
        if not isinstance(configs, Mapping):
            raise ConfigError(f"must be a mapping of tool blocks (got {shown(configs)})", path=where)
        return configs.get(tool) or {}, _join(where, tool)
    configs, where = data.get("tool_config"), _join(path, "tool_config")
    if configs is None or configs == _MISSING:
        configs = {}
    if not isinstance(configs, Mapping):
        raise ConfigError(f"must be a mapping of tool blocks (got {shown(configs)})", path=where)
    if required and tool not in configs and "tool" in data:
        raise ConfigError(f"has no block for tool {tool!r} (found {sorted(configs, key=str)})", path=where)
    return configs.get(tool) or {}, _join(where, tool)


def _build(
    tool: str | None,
    block: Any,
    path: str,
    role: Mapping[str, Any],
    role_path: str,
    *,
    enabled: bool,
    reason: str,
    steps: tuple[int, ...] | None,
    paths: Mapping[str, str],
) -> VerlProfiling:
    """``paths``: where a value filled in from another block is written (:func:`_composed`)."""

    def where(key: str) -> str:
        return paths.get(key, _join(role_path, key))

    # Every bad field is reported at once (profwin validate lists them all).
    errors: list[ConfigError] = []
    all_ranks = _collect(errors, lambda: _bool(role.get("all_ranks", False), where("all_ranks")), False)
    no_ranks: tuple[int, ...] = ()
    ranks = _collect(errors, lambda: _ranks(role.get("ranks") or [], where("ranks")), no_ranks)
    relocate = _collect(errors, lambda: _bool(role.get("relocate_results", False), where("relocate_results")), False)
    save_path = _collect(errors, lambda: _save_path(role.get("save_path"), where("save_path")), _DEFAULT_SAVE_PATH)
    fields: dict[str, Any] = {}
    discrete = False
    if tool is not None:
        prefix = f"tool_config.{tool}."
        tool_paths = {rel[len(prefix) :]: source for rel, source in paths.items() if rel.startswith(prefix)}
        no_fields: tuple[dict[str, Any], bool] = ({}, False)
        fields, discrete = _collect(errors, lambda: _tool_fields(tool, block, path, tool_paths), no_fields)
    if errors:
        raise ConfigError.combine(errors)
    spec = None
    if enabled:
        spec = ProfileSpec(output_dir=save_path, ranks="all" if all_ranks else (ranks or (0,)), **fields)
    return VerlProfiling(
        enabled=enabled,
        reason=reason,
        tool=tool,
        plugins=TOOL_PLUGINS.get(tool, ()) if tool else (),
        spec=spec,
        steps=steps,
        discrete=discrete,
        all_ranks=all_ranks,
        ranks=ranks,
        save_path=save_path,
        relocate_results=relocate,
    )


def _tool_fields(tool: str, block: Any, path: str, paths: Mapping[str, str]) -> tuple[dict[str, Any], bool]:
    """ProfileSpec fields for one tool block, read as verl's profilers read it (``paths``: as for :func:`_build`)."""

    def where(key: str) -> str:
        return paths.get(key, _join(path, key))

    if not isinstance(block, Mapping):
        raise ConfigError(f"must be a mapping (got {shown(block)})", path=path)
    errors = [unknown_key(key, _TOOL_KEYS[tool], path=path) for key in block if key not in _TOOL_KEYS[tool]]
    discrete = _collect(errors, lambda: _bool(block.get("discrete", False), where("discrete")), False)
    if tool == "torch_memory":
        sizes = {}
        for key, default in (("trace_alloc_max_entries", 100_000), ("stack_depth", 32), ("memory_snapshot_num_steps", 1)):
            value = block.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                errors.append(ConfigError(f"must be a positive int (got {shown(value)})", path=where(key)))
            sizes[key] = value
        if errors:
            raise ConfigError.combine(errors)
        # verl's enable_memory_visualize records with context="all", stacks="all".
        options = {"memory": {"max_entries": sizes["trace_alloc_max_entries"], "context": "all", "stacks": "all"}}
        return {"options": options}, False
    contents = block.get("contents") or []
    allowed = _CONTENTS[tool]
    if not isinstance(contents, list):
        errors.append(ConfigError(f"must be a list drawn from {list(allowed)} (got {shown(contents)})", path=where("contents")))
        contents = []
    for i, item in enumerate(contents):
        if item not in allowed:
            errors.append(ConfigError(f"must be one of {list(allowed)} (got {shown(item)})", path=f"{where('contents')}[{i}]"))
    bounds = {key: block[key] for key in ("profile_token_start", "profile_token_end") if block.get(key) is not None}
    window = _collect(errors, lambda: Window.from_mapping(bounds, path=path), Window())
    if errors:
        raise ConfigError.combine(errors)
    fields: dict[str, Any] = {_RECORDED[c]: True for c in contents if c in _RECORDED}
    fields["window"] = window
    # verl always records CPU (its stage markers are CPU events). torch adds CUDA when contents is
    # empty or lists cuda; npu adds the NPU only when listed (an empty list is CPU only).
    if tool == "torch":
        fields["activities"] = None if not contents else ("cpu", "cuda") if "cuda" in contents else ("cpu",)
    else:
        fields["activities"] = ("cpu", "npu") if "npu" in contents else ("cpu",)
        npu_options = {key: block[key] for key in ("level", "analysis") if key in block}
        if npu_options:
            fields["options"] = {"npu": npu_options}
    return fields, discrete


def _collect(errors: list[ConfigError], read: Callable[[], _T], default: _T) -> _T:
    """``read()``, or ``default`` with its error added to ``errors``."""
    try:
        return read()
    except ConfigError as exc:
        errors.extend(exc.errors or [exc])
        return default


def _save_path(value: Any, path: str) -> str:
    if value is None or value == _MISSING:
        return _DEFAULT_SAVE_PATH
    if not isinstance(value, str) or not value:
        raise ConfigError(f"must be a non-empty path (got {shown(value)})", path=path)
    return value


def _steps(value: Any, path: str) -> tuple[int, ...] | None:
    """verl's ``steps``: each a rollout id to core's rule (:class:`profwin.plugin.trainers.Rollouts`)."""
    if value is None or value == []:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"must be a list of trainer steps or null (got {shown(value)})", path=path)
    Rollouts(value, path=path)
    return tuple(value)


def _ranks(value: Any, path: str) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"must be a list of ranks (got {shown(value)})", path=path)
    for i, rank in enumerate(value):
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise ConfigError(f"must be a non-negative int (got {shown(rank)})", path=f"{path}[{i}]")
    return tuple(value)


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false (got {shown(value)})", path=path)
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
