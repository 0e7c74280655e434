"""Plugin discovery through entry points, without importing the libraries plugins drive.

How it works, and why: docs/internals.md, ``profwin.discovery``.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import importlib.util
import io
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs
from attrs import frozen

from profwin import installed, protocols
from profwin.arguments import checked
from profwin.errors import ConfigError, PluginError, Terminated, shown
from profwin.json_form import JsonForm, to_json
from profwin.markers import MARKER_ENV, TORCH_MARKER, StepMarker
from profwin.protocols import Cluster, Command, PluginSpec, Profiler, SpecFormat
from profwin.spec import ProfileSpec

if TYPE_CHECKING:  # asyncio behind it: not imported to list plugins or learn their step markers
    from profwin.engine import Backend

__all__ = [
    "PluginInfo",
    "backend",
    "cluster",
    "commands",
    "engine_flavours",
    "own_distribution",
    "plugins",
    "profiler",
    "spec_formats",
    "step_markers",
    "unmet",
    "validate_options",
]

Status = Literal["ok", "missing dependency", "incompatible", "failed", "shadowed"]
_GROUPS = (
    protocols.BACKENDS_GROUP,
    protocols.PROFILERS_GROUP,
    protocols.TRAINERS_GROUP,
    protocols.CLUSTERS_GROUP,
    protocols.COMMANDS_GROUP,
)
_KINDS = {protocols.BACKENDS_GROUP: "backend", protocols.PROFILERS_GROUP: "profiler", protocols.CLUSTERS_GROUP: "cluster"}
# Plugins profwin publishes, for the install hint of an unknown name: name -> umbrella extra
# (integration_tests/test_trainer_layout.py holds it to the workspace's entry points).
_PUBLISHED = {"vllm": "vllm", "sglang": "sglang", "npu": "npu", "memory": "memory"}
_OWN_PREFIX = "profwin-"
# What wrote to stdout while being imported, and the error: a module is imported once per
# process, so the second listing must still report what the first one saw.
_noisy: dict[str, str] = {}
# The commands the listing loaded, by (distribution, version, name): commands() needs no second scan.
_commands: dict[tuple[str, str, str], Command] = {}


@frozen(kw_only=True)
class PluginInfo(JsonForm):
    """One installed plugin as ``profwin plugins`` shows it."""

    name: str
    group: str
    distribution: str
    version: str
    status: Status
    detail: str = ""
    spec: PluginSpec | None = None
    summary: str = ""
    """One line: the spec's, or a command's own ``help``."""

    def to_dict(self) -> dict[str, Any]:
        """``profwin plugins --json``: the fields, with the one-line summary in place of the spec."""
        return {**to_json(self, exclude=("spec", "summary")), "summary": self.spec.summary if self.spec else self.summary}


def own_distribution(name: str, author: str | None = None) -> bool:
    """Whether the distribution ``name`` is one of profwin's own: ``profwin`` or ``profwin-*``
    (names compared as PyPI normalizes them), by the authors of profwin-core when the metadata
    says (``author``: the distribution's ``Author`` field). A rule, not a list, so a new
    distribution of the workspace is profwin's own the day it is added (the wheel tests hold every
    one of ``packages/`` to it)."""
    canonical = installed.normalized(name)
    if canonical != "profwin" and not canonical.startswith(_OWN_PREFIX):
        return False
    ours = _core_author()
    return author is None or ours is None or author == ours


@functools.cache
def _core_author() -> str | None:
    core = installed.distribution("profwin-core")
    return None if core is None else core.field("Author")  # a wheel whose authors have only an email has none


@frozen
class Unmet:
    """A requirement of a plugin this environment does not meet: ``found`` is the installed
    version, or ``None`` when the distribution is not installed."""

    requirement: str
    name: str
    found: str | None

    def __str__(self) -> str:
        if self.found is None:
            return self.requirement
        return f"{self.requirement} (found {self.name} {self.found})"


@checked
def unmet(requires: Sequence[str]) -> list[Unmet]:
    """The requirements of ``requires`` (PEP 508 strings, as :attr:`PluginSpec.requires
    <profwin.protocols.PluginSpec.requires>` holds them: ``"trl>=1.11,<1.17"``, ``"torch"``) that the
    installed distributions do not meet, checked with ``packaging`` without importing anything.

    A pre-release or development version counts when the range holds it (``1.16.1.dev0`` is in
    ``<1.17``). A requirement without a version is also met by an importable module of its name
    (a package used from a checkout, without installed metadata). A requirement that is not PEP 508
    is a :class:`~profwin.ConfigError` at ``requires[i]``."""
    from packaging.requirements import InvalidRequirement, Requirement

    found = []
    for i, text in enumerate(requires):
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            raise ConfigError(f"must be a requirement like 'trl>=1.11,<1.17' ({exc})", path=f"requires[{i}]") from None
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue  # not for this platform or Python
        version = installed.version(requirement.name)
        if version is None:
            if not requirement.specifier and _importable(requirement.name.replace("-", "_")):
                continue
            found.append(Unmet(text, requirement.name, None))
        elif not requirement.specifier.contains(version, prereleases=True):
            found.append(Unmet(text, requirement.name, version))
    return found


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


_loading = threading.RLock()
"""Held while a plugin loads: ``redirect_stdout`` swaps the process's one ``sys.stdout``, so two
threads loading at once (a fan-out's targets) could each restore the other's capture and leave
``sys.stdout`` a ``StringIO`` (``profwin start --json`` then printed nothing)."""


def _guarded(what: str, load: Callable[[], object]) -> object:
    """``load()`` with nothing it does escaping: any exception, ``sys.exit()`` and ``KeyboardInterrupt``
    raised by the plugin become a :class:`PluginError`; what it prints goes to the error, not stdout.

    Only SIGTERM (:class:`~profwin.errors.Terminated`) passes through: it is not the plugin's doing.
    """
    if what in _noisy:
        raise PluginError(_noisy[what])
    printed = io.StringIO()
    try:
        with _loading, contextlib.redirect_stdout(printed):
            obj = load()
    except Terminated:
        raise
    except SystemExit as exc:
        raise PluginError(f"{what} called sys.exit({shown(exc.code)}) while being imported") from None
    except BaseException as exc:  # a broken plugin must not take the command down
        raise PluginError(f"{what} raised {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
    if printed.getvalue():
        text = " ".join(printed.getvalue().split())
        _noisy[what] = f"{what} printed to stdout while being imported ({shown(text)}); a plugin must not write to stdout"
        raise PluginError(_noisy[what])
    return obj


def _about(ep: installed.EntryPoint) -> tuple[str, str, bool]:
    """The name and version of the distribution that registers ``ep``, and whether it is profwin's own."""
    return ep.dist.name, ep.dist.version, own_distribution(ep.dist.name, ep.dist.field("Author"))


def _inspect(ep: installed.EntryPoint, group: str, distribution: str, version: str, requires: bool) -> PluginInfo:
    base: dict[str, Any] = {"name": ep.name, "group": group, "distribution": distribution, "version": version}
    try:
        spec = _guarded(f"module {ep.module}", ep.load)
    except PluginError as exc:
        return PluginInfo(**base, status="failed", detail=str(exc))
    if group == protocols.COMMANDS_GROUP:
        if not isinstance(spec, Command):
            return PluginInfo(**base, status="failed", detail=f"{ep.value} is a {type(spec).__name__}, not a profwin Command")
        _commands[(distribution, version, ep.name)] = spec
        return PluginInfo(**base, status="ok", summary=spec.help)
    if not isinstance(spec, PluginSpec):
        return PluginInfo(**base, status="failed", detail=f"{ep.value} is a {type(spec).__name__}, not a profwin PluginSpec")
    if spec.api != protocols.PLUGIN_API:
        upgrade = "upgrade the plugin" if spec.api < protocols.PLUGIN_API else "upgrade profwin-core"
        return PluginInfo(
            **base,
            status="incompatible",
            detail=f"written for plugin API {spec.api}, this profwin-core speaks {protocols.PLUGIN_API}: {upgrade}",
            spec=spec,
        )
    if not requires:
        return PluginInfo(**base, status="ok", spec=spec)
    try:
        problems = unmet(spec.requires)
    except ConfigError as exc:
        return PluginInfo(**base, status="failed", detail=f"{ep.value}: {exc}", spec=spec)
    if problems:
        hint = f"; install {spec.install_hint}" if spec.install_hint else ""
        status: Status = "missing dependency" if any(p.found is None for p in problems) else "incompatible"
        return PluginInfo(**base, status=status, detail=f"needs {', '.join(map(str, problems))}{hint}", spec=spec)
    return PluginInfo(**base, status="ok", spec=spec)


@checked
def plugins(group: str | None = None) -> list[PluginInfo]:
    """Every installed plugin (of one group, if given), sorted by group and name.

    Each plugin's status is worked out on every call, since whether its requirements import can
    change without ``sys.path`` changing."""
    return _list(_GROUPS if group is None else (group,), requires=True)


def _list(groups: tuple[str, ...], *, requires: bool) -> list[PluginInfo]:
    """The plugins of ``groups``; with ``requires=False`` their requirements go unchecked (every
    loaded spec is "ok"), which spares parsing them with ``packaging`` where only the specs count."""
    found = []
    for grp in groups:
        first: dict[str, tuple[PluginInfo, bool]] = {}
        entry_points = [(ep, *_about(ep)) for ep in installed.entry_points(grp)]
        for ep, dist, version, own in sorted(entry_points, key=lambda row: not row[3]):
            winner = first.get(ep.name)
            if winner is None:
                info = _inspect(ep, grp, dist, version, requires)
                first[ep.name] = (info, own)
                found.append(info)
            elif winner[0].distribution != dist:
                why = "is profwin's own" if winner[1] else "comes first on sys.path"
                detail = (
                    f"{ep.value} is not used: {winner[0].distribution} {winner[0].version} registers {ep.name!r} too, and {why}"
                )
                found.append(
                    PluginInfo(name=ep.name, group=grp, distribution=dist, version=version, status="shadowed", detail=detail)
                )
            # else: one distribution visible twice (an editable install plus a sys.path entry).
    return sorted(found, key=lambda p: (p.group, p.name, p.status == "shadowed"))


_loaded: dict[tuple[str, str], object] = {}


def _instantiate(info: PluginInfo, kind: str) -> object:
    assert info.spec is not None
    module_name, _, attr = info.spec.target.partition(":")

    def load() -> object:
        # The constructor is the plugin's code too: guarded like its import (sys.exit, printing).
        obj = getattr(importlib.import_module(module_name), attr)
        return obj() if isinstance(obj, type) else obj

    try:
        return _guarded(f"{kind} {info.name!r} ({info.spec.target})", load)
    except PluginError as exc:
        raise PluginError(f"{kind} {info.name!r} failed to load: {exc}") from None


def _load(group: str, name: str) -> object:
    key = (group, name)
    if key in _loaded:
        return _loaded[key]
    infos = {p.name: p for p in plugins(group) if p.status != "shadowed"}
    kind = _KINDS[group]
    if name not in infos:
        installed = ", ".join(sorted(infos)) or "none"
        other_group = protocols.PROFILERS_GROUP if group == protocols.BACKENDS_GROUP else protocols.BACKENDS_GROUP
        elsewhere = next((p for p in plugins(other_group) if p.name == name), None)
        if elsewhere is not None:  # installed, but of the other kind: installing it again changes nothing
            other = "profiler" if kind == "backend" else "backend"
            how = (
                f"it runs in your process: profwin.Session(spec, profiler={name!r})"
                if other == "profiler"
                else f"profwin args {name}, profwin start/stop --engine {name}, profwin.backend({name!r})"
            )
            raise PluginError(
                f"{shown(name)} is a {other} ({elsewhere.distribution} {elsewhere.version}, installed), not a {kind}; "
                f"{kind}s installed: {installed}; {how}"
            )
        extra = _PUBLISHED.get(name)
        hint = f"; install it with: pip install profwin-{extra} (or: pip install 'profwin[{extra}]')" if extra else ""
        close = difflib.get_close_matches(str(name), sorted(infos), n=1, cutoff=0.6)
        hint = hint or (f"; did you mean {close[0]!r}?" if close else "")
        raise PluginError(f"unknown {kind} {shown(name)}; installed {kind}s: {installed}{hint}")
    info = infos[name]
    if info.status != "ok" or info.spec is None:
        raise PluginError(f"{kind} {name!r} from {info.distribution} {info.version} is not usable: {info.status} ({info.detail})")
    _loaded[key] = instance = _instantiate(info, kind)
    return instance


@checked
def backend(name: str) -> Backend:
    """Load the backend plugin ``name`` (``vllm``, ``sglang``); an unknown name lists the installed ones."""
    return cast("Backend", _load(protocols.BACKENDS_GROUP, name))


@checked
def profiler(name: str) -> Profiler:
    """Load the profiler plugin ``name`` (``torch``, ``npu``, ``memory``)."""
    return cast(Profiler, _load(protocols.PROFILERS_GROUP, name))


@checked
def validate_options(spec: ProfileSpec) -> tuple[list[ConfigError], list[str]]:
    """Check ``spec`` with the plugins it names, without their engines.

    Returns ``(errors, notes)``. Each ``options.<name>`` block must name an installed plugin
    (an error otherwise, listing the installed ones) and is checked by that plugin's
    ``validate_options(options)`` when it has one; a backend named in ``options`` also plans the
    spec (``plan(spec)``), so what ``profwin validate`` accepts ``profwin args`` does not reject.
    A plugin whose engine is missing still validates: only its own module is imported.
    """
    errors: list[ConfigError] = []
    notes: list[str] = []
    infos = {p.name: p for p in plugins() if p.spec is not None and p.status in ("ok", "missing dependency")}
    for name, options in spec.options.items():
        info = infos.get(name)
        if info is None:
            installed = ", ".join(sorted(infos)) or "none"
            close = difflib.get_close_matches(name, list(infos), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            errors.append(ConfigError(f"no plugin {shown(name)}; installed: {installed}{hint}", path=f"options.{name}"))
            continue
        try:
            instance = _instantiate(info, info.group)
        except PluginError as exc:
            errors.append(ConfigError(str(exc), path=f"options.{name}"))
            continue
        check = getattr(instance, "validate_options", None)
        try:
            if check is not None:
                check(options)
            elif info.group != protocols.BACKENDS_GROUP:
                notes.append(
                    f"options.{name}: plugin {name!r} ({info.distribution} {info.version}) does not check its options up front"
                )
            if info.group == protocols.BACKENDS_GROUP:
                cast("Backend", instance).plan(spec)
        except ConfigError as exc:
            errors.extend(exc.errors or [exc])
    return errors, notes


@checked
def engine_flavours(engine: str, version: str | None, spec: ProfileSpec) -> list[Mapping[str, Any]]:
    """What installed hardware plugins say an engine build does with ``spec``.

    Each ``profwin.engine_flavours`` entry point is a function ``(engine, version, spec)``
    returning a mapping (e.g. profwin-npu describes vllm-ascend and SGLang-on-NPU) or ``None``
    when it has nothing to say. Backends call this so they never import a sibling plugin.
    """
    found: list[Mapping[str, Any]] = []
    for ep in installed.entry_points(protocols.ENGINE_FLAVOURS_GROUP):
        describe = cast(Callable[..., Any], _guarded(f"module {ep.module}", ep.load))
        flavour = describe(engine, version, spec)
        if flavour is not None:
            found.append(flavour)
    return found


@functools.cache
def step_markers() -> tuple[StepMarker, ...]:
    """Core's marker and every installed plugin's, by preference (cached per process).

    A plugin's marker counts from preference 1, behind core's ``ProfilerStep#`` (0), whatever it
    declares; ``$PROFWIN_STEP_MARKER`` (:data:`profwin.markers.MARKER_ENV`) puts the producer the
    user names first. A plugin that fails to load is skipped here; ``profwin plugins`` reports it.
    """
    found = {TORCH_MARKER.producer: TORCH_MARKER}
    for info in _list(_GROUPS, requires=False):  # whatever a plugin's status, its traces carry its marker
        marker = info.spec.step_marker if info.spec is not None else None
        if marker is not None and marker.producer not in found:
            # A plugin adds a marker; it never outranks core's ProfilerStep# in a torch trace.
            found[marker.producer] = attrs.evolve(marker, preference=max(marker.preference, TORCH_MARKER.preference + 1))
    chosen = os.environ.get(MARKER_ENV, "").strip()
    if chosen:
        if chosen not in found:
            raise ConfigError(
                f"${MARKER_ENV} is {chosen[:80]!r}, which no installed producer declares (known: {', '.join(sorted(found))})"
            )
        found[chosen] = attrs.evolve(found[chosen], preference=TORCH_MARKER.preference - 1)  # the user's choice
    return tuple(sorted(found.values(), key=lambda m: (m.preference, m.producer)))


@functools.cache
def spec_formats() -> tuple[SpecFormat, ...]:
    """Every installed spec format (``profwin.spec_formats`` entry points), by name (cached per process).

    A format that fails to load is skipped here, like a broken plugin's step marker; importing
    its module (``python -c "import MODULE"``) shows why.
    """
    found = []
    for ep in sorted(installed.entry_points(protocols.SPEC_FORMATS_GROUP), key=lambda ep: ep.name):
        try:
            found.append(cast(SpecFormat, _guarded(f"module {ep.module}", ep.load)))
        except PluginError:
            continue
    return tuple(found)


def commands() -> dict[str, Command | PluginError]:
    """The commands other distributions add to ``profwin`` (:data:`~profwin.protocols.COMMANDS_GROUP`),
    by name: each a :class:`~profwin.protocols.Command`, or the :class:`PluginError` saying why it
    cannot run (its module failed to load: ``profwin plugins`` lists it so). A name two
    distributions register is profwin's own (as for every plugin). Loading one imports only its
    module, which the contract keeps cheap: the command line is built from all of them."""
    found: dict[str, Command | PluginError] = {}
    for info in plugins(protocols.COMMANDS_GROUP):  # the whole listing, read once (the step markers reuse it)
        if info.status == "ok":
            found[info.name] = _commands[(info.distribution, info.version, info.name)]
        elif info.status != "shadowed":
            found[info.name] = PluginError(
                f"'profwin {info.name}' of {info.distribution} {info.version} cannot run: {info.detail}"
            )
    return found


@checked
def cluster(name: str) -> Cluster:
    """The :class:`~profwin.protocols.Cluster` registered as ``name`` (``ray``: profwin-ray's
    ``PluginSpec``, its target loaded once per process). Raises :class:`PluginError` with what to
    install when none is, or when it fails to load."""
    if not any(ep.name == name for ep in installed.entry_points(protocols.CLUSTERS_GROUP)):
        raise PluginError(f"no {name!r} cluster support installed: pip install 'profwin[{name}]' (profwin-{name})")
    obj = _load(protocols.CLUSTERS_GROUP, name)
    if not isinstance(obj, Cluster):
        raise PluginError(f"cluster {name!r} is a {type(obj).__name__}, not a profwin Cluster")
    return obj
