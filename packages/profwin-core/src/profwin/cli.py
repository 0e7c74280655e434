"""The ``profwin`` command: data on stdout, logs and errors on stderr, ``--json`` where it fits."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from profwin.atomic import all_or_nothing
from profwin.cli_runner import (
    CliParser,
    how_to_view,
    int_arg,
    print_json,
    ray_address_first,
    run_cli,
    seconds_arg,
    window_arg,
)
from profwin.discovery import backend as load_backend
from profwin.discovery import commands, validate_options
from profwin.discovery import plugins as list_plugins
from profwin.errors import ConfigError, PluginError, ProfilingDisabled, ProfwinError, UnreadableInput, WindowWarning, shown
from profwin.installed import version as dist_version
from profwin.protocols import BACKENDS_GROUP, Command
from profwin.render import FORMS, plan_comments, render_plan
from profwin.spec import ProfileSpec
from profwin.window import MAX_STEP, Window

if TYPE_CHECKING:
    from profwin.engine import EnginePlan

__all__ = ["build_parser", "main"]


_print_json = print_json


def _spec_from_args(args: argparse.Namespace) -> ProfileSpec:
    """The spec a command runs with, by one rule for every command: a value given on the command
    line (``--window``, ``--out``, ``--prefix``) overrides the spec file (``--spec``, ``--at``); the
    command's own defaults (the demo's ``--window 20:80``, and ``ranks: all``: the demo is one
    process, which records whatever ``RANK`` its shell exports) apply only when neither gives one."""
    if getattr(args, "spec", None):
        spec = _load_spec_file(args.spec, getattr(args, "at", None))
    else:
        if getattr(args, "at", None):
            raise ConfigError("selects a block of the spec file: give the file with --spec", path="--at")
        spec = ProfileSpec()
        default = getattr(args, "window_default", None)
        if default is not None and getattr(args, "window", None) is None:
            spec = spec.replace(window=default)
        if getattr(args, "ranks_default", None) is not None:
            spec = spec.replace(ranks=args.ranks_default)
    changes: dict[str, Any] = {}
    if getattr(args, "window", None) is not None:
        changes["window"] = args.window
    if getattr(args, "out", None):
        changes["output_dir"] = args.out
    if getattr(args, "prefix", None):
        changes["prefix"] = args.prefix
    return spec.replace(**changes) if changes else spec


def _load_spec_file(path: str, at: str | None) -> ProfileSpec:
    """``load_spec(path, at=at)``, with an error about ``at`` worded for the command line (``--at``)."""
    from profwin.config import load_spec

    try:
        return load_spec(path, at=at)
    except ConfigError as exc:
        if exc.path == "at" and not exc.errors:
            raise ConfigError(exc.reason.replace("with at=", "with --at"), path="--at") from None
        raise


_ENGINE_VERSION_HELP = "[ENGINE=]VERSION, e.g. vllm=0.32.0 or 0.32.0"


def _engine_version_arg(text: str) -> tuple[str | None, str]:
    """``--engine-version``, the same form in every command: ``ENGINE=VERSION`` or ``VERSION``."""
    name, sep, ver = text.rpartition("=")
    if not ver or (sep and not name):
        raise argparse.ArgumentTypeError(f"must look like {_ENGINE_VERSION_HELP} (got {shown(text)})")
    return (name if sep else None), ver


def _version_for(engine: str, given: Sequence[tuple[str | None, str]]) -> str | None:
    """The version given for ``engine`` (a bare VERSION applies to it too); another engine's is an error."""
    found = None
    for name, ver in given:
        if name is not None and name != engine:
            raise ConfigError(
                f"--engine-version {shown(f'{name}={ver}')} names engine {shown(name)}, but this command is for {engine!r}"
            )
        found = ver
    return found


def _engine_versions(given: Sequence[tuple[str | None, str]]) -> dict[str | None, str]:
    """``window``: versions by engine; ``None`` holds a bare VERSION (for every engine)."""
    return dict(given)


# -- commands ----------------------------------------------------------------------------------


def _planned(name: str, plan: Callable[[], EnginePlan]) -> EnginePlan:
    """``plan()`` of a backend plugin: an exception other than profwin's own is the plugin's
    failure (a :class:`PluginError` naming it), not an internal error of profwin."""
    try:
        return plan()
    except ProfwinError:
        raise
    except Exception as exc:
        text = " ".join(str(exc).split())
        raise PluginError(f"backend {name!r} failed while planning: {type(exc).__name__}: {text[:300]}") from None


def _cmd_plugins(args: argparse.Namespace) -> int:
    infos = list_plugins()
    if args.json:
        _print_json([p.to_dict() for p in infos])
        return 0
    if not infos:
        print("no plugins installed")
        return 0
    rows = [("NAME", "GROUP", "DISTRIBUTION", "VERSION", "STATUS")]
    rows += [(p.name, p.group, p.distribution, p.version, p.status + (f" ({p.detail})" if p.detail else "")) for p in infos]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    notes: list[str] = []
    try:
        spec = _load_spec_file(args.file, args.at)
        plugin_errors, notes = validate_options(spec)
        if plugin_errors:
            raise ConfigError.combine(plugin_errors)
    except UnreadableInput:  # not a "no" about the spec: there is no spec to judge (exit 2, cli.md)
        raise
    except ProfilingDisabled as exc:  # a valid config (e.g. verl's) that profiles nothing
        if args.json:
            _print_json({"file": args.file, "valid": True, "enabled": False, "reason": exc.reason})
        else:
            print(f"{args.file}: valid, profiles nothing ({exc})")
        return 0
    except ConfigError as exc:
        errors = exc.errors or [exc]
        if args.json:
            _print_json({"file": args.file, "valid": False, "errors": [{"path": e.path, "message": e.reason} for e in errors]})
        else:
            print(f"{args.file}: {len(errors)} error(s)", file=sys.stderr)
            for error in errors:
                print(f"  {error}", file=sys.stderr)
        return 1
    summary = {
        "file": args.file,
        "valid": True,
        "enabled": True,
        "window": str(spec.window),
        "activities": list(spec.activities) if spec.activities is not None else "auto",
        "record": list(spec.records()),
        "output_dir": str(spec.output_dir),
        "prefix": spec.prefix,
        "ranks": spec.ranks if spec.ranks == "all" else list(spec.ranks),
        "options": {k: dict(v) for k, v in spec.options.items()},
        "notes": notes,
    }
    if args.json:
        _print_json(summary)
    else:
        print(f"{args.file}: valid")
        for key, value in summary.items():
            if key not in ("file", "valid", "enabled", "notes"):
                print(f"  {key}: {value}")
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    return 0


def _cmd_window(args: argparse.Namespace) -> int:
    window: Window = args.window_text
    versions = _engine_versions(args.engine_version)
    info: dict[str, Any] = {
        "window": str(window),
        "steps_to_skip": window.steps_to_skip,
        "steps_to_record": window.steps_to_record,
        "first_recorded_step": window.start,
        "last_recorded_step": window.last,
        "backends": {},
    }
    for plugin in list_plugins(BACKENDS_GROUP):
        if plugin.status != "ok":
            info["backends"][plugin.name] = {"status": plugin.status, "detail": plugin.detail}
            continue
        try:
            version = versions.get(plugin.name, versions.get(None))
            plan = _planned(
                plugin.name, functools.partial(load_backend(plugin.name).plan, ProfileSpec(window=window), version=version)
            )
            info["backends"][plugin.name] = plan.to_dict()
        except (ConfigError, PluginError) as exc:
            info["backends"][plugin.name] = {"error": str(exc)}
    if args.json:
        _print_json(info)
        return 0
    last = "the end of the session" if window.last is None else f"step {window.last}"
    if window.in_tokens:
        bound = "∞" if window.end is None else window.end
        print(f"window {window}: the steps that produce response tokens [{window.start}, {bound}) (docs/window.md)")
        print(f"  open at the first step that produces a token in [{window.start}, {bound}) for some request")
        cap = (
            "until a step decodes none"
            if window.length is None
            else f"at most {2 * window.length} step(s) with one and {2 * window.length} prefill-only step(s)"
        )
        print(
            f"  record while every step produces one or decodes nothing (prefill-only), {cap}; "
            f"engines without profwin's plugin record steps {window.in_steps()}"
        )
    else:
        print(f"window {window}: steps [{window.start}, {'∞' if window.end is None else window.end}) of the session")
        print(f"  skip {window.steps_to_skip} step(s) (0..{window.start - 1})" if window.start else "  skip nothing")
        record = "until the session stops" if window.steps_to_record is None else f"{window.steps_to_record} step(s)"
        print(f"  record {record}: step {window.start} to {last}")
    for name, described in info["backends"].items():
        if "engine" not in described:
            print(f"  {name}: " + ", ".join(f"{k}={v}" for k, v in described.items()))
            continue
        numbers = described["request"] or described["launch"] or described["env"]
        print(
            f"  {name} {described['version'] or '(version unknown)'} ({described['version_source']}): {described['mechanism']}, "
            f"records {_records(described)}; sends {json.dumps(numbers, separators=(',', ':'))}"
        )
        if described["server_requirement"]:
            print(f"    needs {described['server_requirement']}; without it: {described['fallback']}")
        if described["alternative"]:
            other = described["alternative"]
            print(
                f"    with {other['needs']}: sends {json.dumps(other['request'], separators=(',', ':'))} "
                f"(records {other['records']})"
            )
    return 0


def _records(described: dict[str, Any]) -> str:
    """What a plan's engine records, in words (``described``: the plan's JSON form)."""
    if str(described["window"]).endswith(" tokens"):
        return "the steps of the token window (decided in the engine)"
    return f"steps {described['records'] or 'until the stop'}"


def _cmd_args(args: argparse.Namespace) -> int:
    spec = _spec_from_args(args)
    engine = load_backend(args.engine)
    version = _version_for(args.engine, args.engine_version)
    plan = _planned(args.engine, lambda: engine.plan(spec, version=version))
    if args.json:  # the condition is in the plan's fields: server_requirement, fallback
        _print_json(plan.to_dict())
        return 0
    # stdout holds only what to paste (flags, keywords, exports, a request); what it records, what
    # it needs where the engine runs and what happens without that are said on stderr.
    text = render_plan(plan, args.form or engine.default_form)
    paste = [line for line in text.splitlines() if not line.startswith("#")]
    said = plan_comments(plan)
    said += [line for line in text.splitlines() if line.startswith("#") and line not in said]
    if paste:
        print("\n".join(paste))
    for line in said:
        print(line, file=sys.stderr)
    return 0


def _remote(args: argparse.Namespace, action: str) -> int:
    # Here, not at the top: asyncio and the HTTP client, which the other commands do without.
    from profwin.runtime.remote import start_remote, stop_remote
    from profwin.runtime.router import start_router, stop_router

    spec = _spec_from_args(args)
    api_key = args.api_key or os.environ.get("PROFWIN_API_KEY") or None
    version = _version_for(args.engine, args.engine_version)
    options = {"version": version, "api_key": api_key, "timeout": args.timeout}
    with warnings.catch_warnings():
        if action == "stop":
            # The lines printed below say what each engine recorded, and why nothing where
            # nothing: a WindowWarning would print the same news a second time.
            warnings.simplefilter("ignore", WindowWarning)
        if args.router:
            on_router = start_router if action == "start" else stop_router
            results = on_router(args.engine, args.router, spec, **options)
        else:
            on_urls = start_remote if action == "start" else stop_remote
            results = on_urls(args.engine, args.url, spec, **options)
    return _report_remote(args, action, spec, results)


def _report_remote(args: argparse.Namespace, action: str, spec: ProfileSpec, results: list[Any]) -> int:
    traces = [a for r in results for a in r.artifacts if a.kind == "trace"]
    if args.json:
        _print_json([r.to_dict() for r in results])
    else:
        for r in results:
            status = "ok" if r.ok else "FAILED"
            if r.details.get("skipped"):  # its message begins "skipped: ", the why
                print(f"{r.target}: {r.message}")
            else:
                print(f"{r.target}: {status}{' - ' + r.message if r.message else ''}")
            for a in r.artifacts:
                print(f"  {a.path} ({a.bytes:,} bytes, steps {a.steps if a.steps is not None else '?'})")
        if traces:
            print(how_to_view([a.path for a in traces]))
    if action == "stop" and not args.json:
        # One line per engine that brought back no trace, with the reason profwin knows.
        for r in results:
            if not any(a.kind == "trace" for a in r.artifacts) and r.details.get("nothing_recorded"):
                print(f"profwin: nothing was recorded on {r.target}: {r.details['nothing_recorded']}", file=sys.stderr)
    skipped = [r for r in results if not r.ok and r.details.get("skipped")]
    if len(skipped) == len(results) or not all(r.ok for r in results if r not in skipped):
        return 1
    if action == "stop" and not traces:
        # Nothing was recorded (the window was never reached, say): not a success to scripts.
        if not any(r.details.get("nothing_recorded") for r in results) and not args.json:
            print(f"profwin: nothing was recorded: no trace was collected for window {spec.window}", file=sys.stderr)
        return 1
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    spec = _spec_from_args(args)
    # Refusals first, before the slow imports (torch takes seconds): an output path that is not a
    # writable folder (an existing file, say) is refused here, not after the model is built.
    spec.prepare_output_dir()
    if not args.quiet:
        print(
            f"profwin demo: profiling window {spec.window} of {args.steps} decode steps of a tiny CPU decoder; "
            "loading torch (a few seconds)…",
            file=sys.stderr,
            flush=True,
        )
    from profwin.demo import TinyDecoder, run_demo, run_full_trace, warm_up_profiler

    model = TinyDecoder()
    if args.compare_full:
        warm_up_profiler()
    with warnings.catch_warnings():
        # The demo reports a window it did not reach (or did not record) in its own words, below: one line, not two.
        warnings.simplefilter("ignore", WindowWarning)
        windowed = run_demo(spec, steps=args.steps, progress=not args.quiet, model=model)
    results = [windowed]
    if args.compare_full and windowed.reason is None:
        results.append(run_full_trace(spec, steps=args.steps, progress=not args.quiet, model=model))
    expected = spec.window.clip(args.steps)
    if args.json:
        _print_json([r.to_dict() for r in results])
        return 0 if windowed.reason is None and expected is not None and len(windowed.recorded_steps) == expected.length else 1
    w = windowed
    if w.reason is not None:
        hint = ""
        if expected is None:
            hint = f"; run at least {spec.window.start + 1} steps (--steps) or choose a window inside them (--window)"
        print(f"profwin: nothing was recorded: {w.reason}{hint}", file=sys.stderr)
        return 1
    assert expected is not None  # a window clipped to nothing records nothing, said above
    cut = ""
    if spec.window.end is not None and expected != spec.window:  # an open window always ends with the run
        cut = f" (the run ends inside it: steps {expected} recorded; --steps {spec.window.end} runs it whole)"
    print(f"steps run:       {w.steps_run}")
    print(f"window:          {spec.window}{cut}")
    print(
        f"steps recorded:  {len(w.recorded_steps)} (expected {expected.length}; "
        f"markers {w.recorded_steps[0] if w.recorded_steps else '-'}..{w.recorded_steps[-1] if w.recorded_steps else '-'})"
    )
    for a in w.artifacts:
        print(f"trace:           {a.path} ({a.bytes:,} bytes)")
    print(f"wall time:       {w.wall_s:.3f} s")
    if args.compare_full:
        full = results[1]
        print()
        print(f"{'':12}{'windowed':>14}{'full run':>14}{'windowed/full':>16}")
        print(f"{'trace bytes':12}{w.trace_bytes:>14,}{full.trace_bytes:>14,}{w.trace_bytes / full.trace_bytes:>16.3f}")
        print(f"{'wall s':12}{w.wall_s:>14.3f}{full.wall_s:>14.3f}{w.wall_s / full.wall_s:>16.3f}")
        print(f"full-run trace:  {full.artifacts[0].path}")
    print(how_to_view([a.path for r in results for a in r.artifacts]))
    return 0 if len(w.recorded_steps) == expected.length else 1


def _version_text() -> str:
    """One line per distribution: the umbrella (when installed), core, then each plugin's with
    the entry points it provides."""
    provides: dict[tuple[str, str], list[str]] = {("profwin-core", dist_version("profwin-core") or "?"): []}
    for p in list_plugins():
        provides.setdefault((p.distribution, p.version), []).append(f"{p.group}: {p.name}, {p.status}")
    umbrella = dist_version("profwin")
    lines = [f"profwin {umbrella}"] if umbrella else []
    for (dist, ver), entries in provides.items():
        lines.append(f"{dist} {ver}" + (f" ({'; '.join(entries)})" if entries else ""))
    return "\n".join(lines)


# -- parser ------------------------------------------------------------------------------------


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show core and plugin versions and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        assert isinstance(parser, CliParser)
        parser.print_message(_version_text() + "\n")
        parser.exit()


def _add_spec_options(p: argparse.ArgumentParser, *, window_default: str | None = None) -> None:
    """``--spec``, ``--at``, ``--window``, ``--out``, ``--prefix``: what :func:`_spec_from_args` reads.
    A default of the command's own (``window_default``) is kept apart from the values given, so it
    never overrides the spec file."""
    p.add_argument("--spec", metavar="FILE", help="profile spec (YAML/JSON, or a verl profiler block)")
    p.add_argument(
        "--at",
        metavar="KEY.PATH",
        help="the block of --spec to read, e.g. actor_rollout_ref.rollout.profiler (a verl trainer file)",
    )
    default_help = f" (default: the spec file's, else {window_default})" if window_default else " (default: the spec file's)"
    p.add_argument("--window", type=window_arg, default=None, help=f"steps to record, START:END half-open{default_help}")
    p.add_argument("--out", metavar="DIR", help="output directory for traces (--out is a directory in every command)")
    p.add_argument("--prefix", help="file-name prefix for traces")
    p.set_defaults(window_default=window_arg(window_default) if window_default else None)


def _add_remote_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", required=True, help="backend name (vllm, sglang)")
    servers = p.add_mutually_exclusive_group(required=True)
    servers.add_argument("--url", action="append", help="the server's URL, not its OpenAI base URL (/v1); repeat for several")
    servers.add_argument("--router", metavar="URL", help="a router (sglang-router, vllm-router): profile every worker it lists")
    p.add_argument(
        "--engine-version", action="append", default=[], type=_engine_version_arg, metavar="[ENGINE=]VERSION",
        help=f"engine version, when it cannot be asked from the server: {_ENGINE_VERSION_HELP}",
    )  # fmt: skip
    p.add_argument("--api-key", help="bearer token (default: $PROFWIN_API_KEY)")
    p.add_argument("--timeout", type=seconds_arg, default=30.0, help="seconds per request (default 30)")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    _add_spec_options(p)


def build_parser(added: Mapping[str, Command | PluginError] | None = None) -> argparse.ArgumentParser:
    """The ``profwin`` argument parser (also used to generate docs/cli.md): core's commands, then
    those other distributions add (``added``, default :func:`~profwin.discovery.commands`)."""
    parser = CliParser(prog="profwin", description="Profile an exact window of generation steps on any engine.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("plugins", help="list installed plugins and their status")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=_cmd_plugins)

    p = sub.add_parser("validate", help="check a profile spec file; exit 1 listing every error")
    p.add_argument("file", help="YAML/JSON spec, or a verl config (a profiler block, or a whole file with --at)")
    p.add_argument("--at", metavar="KEY.PATH", help="the block to check, e.g. actor_rollout_ref.rollout.profiler")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=_cmd_validate)

    p = sub.add_parser("window", help="explain a window and what each installed backend is sent")
    p.add_argument("window_text", metavar="WINDOW", type=window_arg, help="START:END, e.g. 20:80")
    p.add_argument(
        "--engine-version", action="append", default=[], type=_engine_version_arg, metavar="[ENGINE=]VERSION",
        help=f"describe for this engine version (repeatable): {_ENGINE_VERSION_HELP}; a bare VERSION is for every engine",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=_cmd_window)

    p = sub.add_parser("args", help="print the launch arguments an engine needs for a window")
    p.add_argument("engine", help="backend name (vllm, sglang)")
    p.add_argument("--for", dest="form", help=f"what to print: {', '.join(FORMS)} (default: the engine's own)")
    p.add_argument(
        "--engine-version", action="append", default=[], type=_engine_version_arg, metavar="[ENGINE=]VERSION",
        help=f"target engine version, {_ENGINE_VERSION_HELP} (default: the installed one, else the newest)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the whole plan as JSON")
    _add_spec_options(p)
    p.set_defaults(func=_cmd_args)

    for action in ("start", "stop"):
        p = sub.add_parser(action, help=f"{action} a profiling session on live engine servers")
        _add_remote_options(p)
        p.set_defaults(func=lambda a, _action=action: _remote(a, _action))

    p = sub.add_parser("demo", help="profile a window of a tiny CPU decoder (the main job; needs torch)")
    p.add_argument("--steps", type=int_arg(1, MAX_STEP), default=100, help="generation steps to run (default 100)")
    p.add_argument("--compare-full", action="store_true", help="also profile the whole run and compare")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    _add_spec_options(p, window_default="20:80")
    p.set_defaults(func=_cmd_demo, ranks_default="all")

    for name, command in sorted((commands() if added is None else added).items()):
        if isinstance(command, Command) and name not in sub.choices:  # core's own commands keep their names
            p = sub.add_parser(name, help=command.help)
            command.arguments(p)
            p.set_defaults(func=command.run, writes_results=command.writes_results)
    return parser


_ELSEWHERE = {
    **dict.fromkeys(
        ("summarize", "diff", "trim", "merge", "timeline"),
        ("profwin-traces", '"profwin-traces" (the umbrella "profwin" includes it'),
    ),
    "collect": ("profwin-ray", '"profwin[ray]" (profwin-ray, with ray'),
}
"""Commands of profwin's other distributions (:data:`~profwin.protocols.COMMANDS_GROUP`), for the
one line that says what to install when a user types one that is not installed: the distribution,
and what to install, in the words of the docs' install line (docs/quickstart.md#installing)."""


def _check_command(word: str | None, added: Mapping[str, Command | PluginError]) -> None:
    """The command ``word`` can run here, or the error saying why not: the plugin that adds it
    failed to load, or the distribution that adds it is not installed (and what to install)."""
    found = added.get(word) if word is not None else None
    if isinstance(found, PluginError):
        raise found
    if found is None and word in _ELSEWHERE:
        dist, what = _ELSEWHERE[word]
        raise PluginError(
            f"'profwin {word}' comes with {dist}, which is not installed: "
            f"pip install --find-links dist/ {what}; dist/: bash scripts/build_dists.sh dist/)"
        )


def _main(argv: Sequence[str] | None) -> int:
    words = ray_address_first(sys.argv[1:] if argv is None else argv)
    added = commands()
    # The first word that is not an option is the command: profwin's own options take no value.
    _check_command(next((w for w in words if not w.startswith("-")), None), added)
    args = build_parser(added).parse_args(words)
    if getattr(args, "writes_results", False):
        # Its files are its result: stopped (Ctrl-C, SIGTERM), it leaves none of them, even one
        # already renamed into place. The others keep what they did (``demo``: the window
        # recorded, as a session keeps it on an early exit; ``collect``: what arrived;
        # ``start``/``stop``: their own state and rollback).
        with all_or_nothing():
            return int(args.func(args))
    return int(args.func(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``profwin``; errors are one line and a documented exit code (see :mod:`profwin.cli_runner`)."""
    return run_cli(_main, argv, prog="profwin")


if __name__ == "__main__":
    sys.exit(main())
