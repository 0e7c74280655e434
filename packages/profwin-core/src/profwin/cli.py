"""The ``profwin`` command: data on stdout, logs and errors on stderr, ``--json`` where it fits."""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from typing import TYPE_CHECKING, Any

from profwin.atomic import all_or_nothing, check_output_path
from profwin.cli_runner import EXIT_INTERRUPTED, CliParser, int_arg, print_json, run_cli, seconds_arg
from profwin.discovery import backend as load_backend
from profwin.discovery import cluster, validate_options
from profwin.discovery import plugins as list_plugins
from profwin.errors import ConfigError, PluginError, ProfilingDisabled, ProfwinError, UnreadableInput, WindowWarning, shown
from profwin.protocols import BACKENDS_GROUP, CollectInterrupted
from profwin.render import FORMS, plan_comments, render_plan
from profwin.spec import ProfileSpec
from profwin.traces.view import how_to_view
from profwin.window import MAX_STEP, Window

if TYPE_CHECKING:
    from profwin.engine import EnginePlan

__all__ = ["build_parser", "main"]


_print_json = print_json


def _window_arg(text: str) -> Window:
    try:
        return Window.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _spec_from_args(args: argparse.Namespace) -> ProfileSpec:
    """The spec a command runs with, by one rule for every command: a value given on the command
    line (``--window``, ``--out``, ``--prefix``) overrides the spec file (``--spec``, ``--at``); the
    command's own default (the demo's ``--window 20:80``) applies only when neither gives one."""
    if getattr(args, "spec", None):
        spec = _load_spec_file(args.spec, getattr(args, "at", None))
    else:
        if getattr(args, "at", None):
            raise ConfigError("selects a block of the spec file: give the file with --spec", path="--at")
        spec = ProfileSpec()
        default = getattr(args, "window_default", None)
        if default is not None and getattr(args, "window", None) is None:
            spec = spec.replace(window=default)
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
        raise argparse.ArgumentTypeError(f"must look like {_ENGINE_VERSION_HELP} (got {text!r})")
    return (name if sep else None), ver


def _version_for(engine: str, given: Sequence[tuple[str | None, str]]) -> str | None:
    """The version given for ``engine`` (a bare VERSION applies to it too); another engine's is an error."""
    found = None
    for name, ver in given:
        if name is not None and name != engine:
            raise ConfigError(f"--engine-version {name}={ver} names engine {name!r}, but this command is for {engine!r}")
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
    from profwin.remote import start_remote, stop_remote
    from profwin.router import start_router, stop_router

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
    print(f"steps run:       {w.steps_run}")
    print(f"window:          {spec.window}")
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


def _one_trace(args: argparse.Namespace) -> str | list[str] | None:
    """The trace ``profwin summarize`` names when it names one: a file, a folder holding one
    trace (which then reads exactly as the file would), or the part traces of one long window
    (files or their folder, read as one); ``None`` for several, or on Ray."""
    from pathlib import Path

    if args.ray:
        return None
    if len(args.trace) == 1 and not Path(args.trace[0]).is_dir():
        return str(args.trace[0])  # trim's rule too; here before importing ranks (summarize FILE's start-up)
    from profwin.traces.ranks import window_parts

    units = window_parts(args.trace)
    if len(units) != 1:
        return None
    return str(units[0][0]) if len(units[0]) == 1 else [str(p) for p in units[0]]


def _summary(args: argparse.Namespace, one: str | list[str] | None) -> Any:
    """What ``profwin summarize`` shows: a :class:`~profwin.traces.Summary` of one trace (``one``)
    or the :class:`~profwin.traces.Ranks` of several (a folder, many files, or the nodes of a Ray cluster)."""
    from profwin.traces import tty_progress

    options = {"window": args.window, "top": args.top, "first_step": args.first_step}
    if args.ray:  # on the nodes that hold the traces; the same result as for the files on one disk
        return cluster("ray").summarize(args.trace, address=args.ray, session=args.session, **options)
    # The modules a command needs only (one trace: not those of ranks; 0.005 CPU s of a start).
    if one is not None:
        from profwin.traces import summarize

        if args.session is not None:  # one trace: it must be of that session
            from profwin.traces import choose_session, trace_facts

            choose_session([trace_facts(p) for p in ([one] if isinstance(one, str) else one)], args.session)
        shown = one if isinstance(one, str) else f"{len(one)} parts of one window"
        return summarize(one, **options, progress=tty_progress(f"reading {shown}"))
    from profwin.traces import summarize_ranks

    return summarize_ranks(args.trace, **options, progress=lambda path: tty_progress(f"reading {path}"), session=args.session)


def _cmd_summarize(args: argparse.Namespace) -> int:
    from pathlib import Path

    from profwin.traces import Summary
    from profwin.traces.reader import trace_command

    if args.plot:
        _check_plot(args.plot, args.trace)
    with trace_command(blas=not args.ray):  # Ray's local workers inherit this process's environment
        one_trace = _one_trace(args)
        result = _summary(args, one_trace)
    one = isinstance(result, Summary)
    if args.plot:
        from profwin.traces import plot_ranks, plot_steps

        if one:
            plot_steps(result, args.plot)
        else:
            plot_ranks(result, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    if args.json:
        _print_json(result.to_dict())
    elif one:  # only the form that is printed is built: the JSON form of a long trace's steps costs 0.08 s
        from profwin.traces import render_summary

        print(render_summary(result))
        if one_trace is not None:  # paths on the nodes (--ray): nothing here to open
            print("\n" + how_to_view([Path(p) for p in ([one_trace] if isinstance(one_trace, str) else one_trace)]))
    else:
        from profwin.traces import render_ranks, trace_files

        print(render_ranks(result))
        if not args.ray:  # paths on the nodes: nothing here to open
            print("\n" + how_to_view(trace_files(args.trace)))
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from pathlib import Path

    try:
        report = cluster("ray").collect(
            args.source,
            Path(args.to),
            address=args.ray,
            chunk_bytes=args.chunk_bytes,
            progress=sys.stderr.isatty() and not args.json,
        )
        code = 0 if report.ok else 1
    except CollectInterrupted as stopped:  # what arrived is kept: say what it is
        report, code = stopped.report, EXIT_INTERRUPTED
    if args.json:
        _print_json(report.to_dict())
    else:
        print(report.render())
    return code


_RAY_ADDRESS = re.compile(r"auto|ray://\S+|[\w.-]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5}")


def _ray_address_first(argv: Sequence[str]) -> list[str]:
    """``--ray`` takes an optional ADDRESS: when the word after it is not one (``auto``,
    ``HOST:PORT``, ``ray://...``), it is a trace path, and ``--ray`` means ``--ray auto``."""
    out = list(argv)
    for i, word in enumerate(out[:-1]):
        if word == "--ray" and not _RAY_ADDRESS.fullmatch(out[i + 1]):
            out.insert(i + 1, "auto")
            break
    return out


def _cmd_diff(args: argparse.Namespace) -> int:
    from profwin.traces import diff, plot_diff, render_diff, trace_files
    from profwin.traces.reader import trace_command

    if args.plot:
        _check_plot(args.plot, [args.a, args.b])
    with trace_command():
        result = diff(args.a, args.b, window=args.window, b_window=args.b_window, top=args.top, first_step=args.first_step)
    if args.plot:
        plot_diff(result, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(render_diff(result))
        print("\n" + how_to_view([*trace_files([args.a]), *trace_files([args.b])]))
    return 0


_PLOT_FORMATS = (".png", ".pdf", ".svg", ".svgz", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".gif", ".eps", ".ps")


def _check_plot(plot: str, inputs: Sequence[str]) -> None:
    """Before any work: ``--plot`` names an image format matplotlib writes, is a path profwin
    may write (:func:`check_output_path`) and is none of the inputs."""
    from pathlib import Path

    if not plot.lower().endswith(_PLOT_FORMATS):
        raise ConfigError(f"--plot must name an image file ending in {', '.join(_PLOT_FORMATS)} (got {shown(plot)})", path="plot")
    target = check_output_path(plot)
    for given in inputs:
        if target.exists() and Path(given).exists() and os.path.samefile(target, given):
            raise ConfigError(f"--plot {shown(plot)} is one of the input traces; name another file", path="plot")


def _cmd_trim(args: argparse.Namespace) -> int:
    from profwin.traces import trim, tty_progress
    from profwin.traces.reader import trace_command

    check_output_path(args.output)
    source = args.trace[0] if len(args.trace) == 1 else args.trace
    progress = tty_progress(f"trimming {args.trace[0] if len(args.trace) == 1 else f'{len(args.trace)} parts'}", passes=2)
    with trace_command():  # trim reads its input twice
        result = trim(source, args.window, args.output, first_step=args.first_step, progress=progress)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(
            f"{result.path}: steps {result.steps} ({result.step_count} steps, {result.events:,} events, {result.bytes:,} bytes)"
        )
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        print(how_to_view([result.path]))
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from profwin.traces import merge, tty_progress
    from profwin.traces.reader import trace_command

    check_output_path(args.output)

    def progress(path: Any, n: int) -> Any:
        return tty_progress(f"{'reading' if n == 1 else 'merging'} {path}")

    with trace_command():
        result = merge(
            args.trace, args.output, window=args.window, first_step=args.first_step, session=args.session, progress=progress,
            timelines=args.timeline or (),
        )  # fmt: skip
    if args.json:
        _print_json(result.to_dict())
    else:
        timelines = sum(t.producer == "profwin.timeline" for t in result.traces)
        print(
            f"{result.path}: {len(result.traces) - timelines} traces"
            + (f" and {timelines} session timeline(s)" if timelines else "")
            + f", one process each, aligned on step {result.aligned_step} ({result.events:,} events, {result.bytes:,} bytes)"
        )
        for t in result.traces:
            print(f"  pid {t.pid}: {t.label}, {t.producer} steps {t.steps}, times {t.shift_us:+,.3f} us")
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        print(how_to_view([result.path]))
    return 0


def _cmd_timeline(args: argparse.Namespace) -> int:
    from profwin.traces.timeline import plot_timeline, read_timelines, render_timeline, timeline_report

    if args.plot:
        _check_plot(args.plot, args.timeline)
    report = timeline_report(args.timeline, session=args.session, length=args.length)
    if args.plot:
        timelines, _ = read_timelines(args.timeline, session=args.session)
        plot_timeline(report, timelines, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    if args.json:
        _print_json(report.to_dict())
    else:
        print(render_timeline(report))
    return 0


def _version_text() -> str:
    """One line per distribution: the umbrella (when installed), core, then each plugin's with
    the entry points it provides."""
    provides: dict[tuple[str, str], list[str]] = {("profwin-core", dist_version("profwin-core")): []}
    for p in list_plugins():
        provides.setdefault((p.distribution, p.version), []).append(f"{p.group}: {p.name}, {p.status}")
    try:
        lines = [f"profwin {dist_version('profwin')}"]
    except PackageNotFoundError:
        lines = []
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
    p.add_argument("--window", type=_window_arg, default=None, help=f"steps to record, START:END half-open{default_help}")
    p.add_argument("--out", metavar="DIR", help="output directory for traces (--out is a directory in every command)")
    p.add_argument("--prefix", help="file-name prefix for traces")
    p.set_defaults(window_default=_window_arg(window_default) if window_default else None)


def _add_remote_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", required=True, help="backend name (vllm, sglang)")
    servers = p.add_mutually_exclusive_group(required=True)
    servers.add_argument("--url", action="append", help="server URL; repeat for several servers")
    servers.add_argument("--router", metavar="URL", help="a router (sglang-router, vllm-router): profile every worker it lists")
    p.add_argument(
        "--engine-version", action="append", default=[], type=_engine_version_arg, metavar="[ENGINE=]VERSION",
        help=f"engine version, when it cannot be asked from the server: {_ENGINE_VERSION_HELP}",
    )  # fmt: skip
    p.add_argument("--api-key", help="bearer token (default: $PROFWIN_API_KEY)")
    p.add_argument("--timeout", type=seconds_arg, default=30.0, help="seconds per request (default 30)")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    _add_spec_options(p)


def _add_ray_option(p: argparse.ArgumentParser, what: str, *, required: bool = False) -> None:
    p.add_argument(
        "--ray", nargs="?", const="auto", default=None, required=required, metavar="ADDRESS",
        help=f"{what}: ADDRESS is auto (default), HOST:PORT or ray://HOST:PORT; needs profwin[ray]",
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The ``profwin`` argument parser (also used to generate docs/cli.md)."""
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
    p.add_argument("window_text", metavar="WINDOW", type=_window_arg, help="START:END, e.g. 20:80")
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
    p.set_defaults(func=_cmd_demo)

    first_step_help = (
        "number of the trace's first step (vLLM/SGLang traces do not record it; default 0, or what a trimmed trace recorded)"
    )
    p = sub.add_parser("summarize", help="steps, per-step time, device time and top operators of traces (streaming)")
    p.add_argument(
        "trace", nargs="+",
        help="Chrome/Kineto trace (.json or .json.gz) from torch, vLLM, SGLang or profwin; several, or a folder: one per rank",
    )  # fmt: skip
    p.add_argument("--window", type=_window_arg, help="only these steps (numbered by the producer's markers)")
    p.add_argument("--top", type=int_arg(0), default=20, help="operators to list by self time (default 20)")
    p.add_argument("--first-step", type=int_arg(0, MAX_STEP), metavar="N", help=first_step_help)
    p.add_argument(
        "--session", metavar="ID",
        help="of traces from several profiling sessions, this one (an id or its prefix; default: each rank's newest, "
        "said so); with --ray the same, on the nodes' traces",
    )  # fmt: skip
    p.add_argument(
        "--plot", metavar="PNG",
        help="draw per-step time (one trace) or a steps x ranks heat map (several); needs matplotlib",
    )  # fmt: skip
    _add_ray_option(p, "summarize each trace on the Ray node that holds it; only summaries travel")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=_cmd_summarize)

    p = sub.add_parser("collect", help="copy a session's files from every Ray node into one folder (needs profwin[ray])")
    _add_ray_option(p, "the Ray cluster to collect from", required=True)
    p.add_argument("--from", dest="source", required=True, metavar="PATTERN", help="path or glob on the nodes (** for any depth)")
    p.add_argument("--to", required=True, metavar="DIR", help="folder on this machine; files land in DIR/<node>/<file>")
    p.add_argument(
        "--chunk-bytes", type=int_arg(1024), default=1 << 22, metavar="N",
        help="bytes per transfer (memory is bounded by this, not the file size; default 4 MiB)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the per-node results as JSON")
    p.set_defaults(func=_cmd_collect)

    p = sub.add_parser("diff", help="compare two traces (or two folders of per-rank traces) step by step and by operator")
    p.add_argument("a", help="the trace or folder before (A)")
    p.add_argument("b", help="the trace or folder after (B)")
    p.add_argument("--window", type=_window_arg, help="only these steps, on both sides")
    p.add_argument("--b-window", type=_window_arg, help="other steps for B (default: --window)")
    p.add_argument("--top", type=int_arg(0), default=20, help="operators to list, largest change first (default 20)")
    p.add_argument("--first-step", type=int_arg(0, MAX_STEP), metavar="N", help=first_step_help)
    p.add_argument("--plot", metavar="PNG", help="draw per-operator bars of A and B (needs matplotlib)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=_cmd_diff)

    p = sub.add_parser(
        "merge", help="write the traces of one window as one trace, each rank or engine its own process, steps aligned"
    )
    p.add_argument(
        "trace", nargs="+",
        help="the traces (.json or .json.gz) of one window: files, a folder of them, or a profwin collect folder",
    )  # fmt: skip
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output trace file (.json.gz, or .json)")
    p.add_argument("--window", type=_window_arg, help="only these steps; aligned on the first one every trace holds")
    p.add_argument("--first-step", type=int_arg(0, MAX_STEP), metavar="N", help=first_step_help)
    p.add_argument(
        "--session", metavar="ID", help="of traces from several profiling sessions, this one (default: each rank's newest)"
    )
    p.add_argument(
        "--timeline", action="append", metavar="FILE|DIR",
        help="also the session's timeline (record: [timeline]): counter tracks, one slice per request, the window marked; repeatable",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_merge)

    p = sub.add_parser(
        "timeline", help="where a rollout's time goes: phases, the long tail, where the window sits, a suggested window"
    )
    p.add_argument(
        "timeline", nargs="+", metavar="FILE|DIR",
        help="session timelines (*.timeline.json, record: [timeline]): files, or a folder of them; several ranks or engines are compared",
    )  # fmt: skip
    p.add_argument(
        "--session", metavar="ID", help="of timelines from several profiling sessions, this one (default: the newest, said so)"
    )
    p.add_argument(
        "--length", type=int_arg(1, MAX_STEP), default=32, metavar="N", help="steps of the suggested window (default 32)"
    )
    p.add_argument(
        "--plot", metavar="PNG",
        help="draw batch size and tokens per step over time (phases and the window shaded) and each request's lifespan; needs matplotlib",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=_cmd_timeline)

    p = sub.add_parser("trim", help="write a trace holding only a window of steps (streaming)")
    p.add_argument(
        "trace",
        nargs="+",
        help="Chrome/Kineto trace (.json or .json.gz), or the part traces of one long window (files or their folder)",
    )
    p.add_argument("--window", type=_window_arg, required=True, help="steps to keep, START:END")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output trace file (.json or .json.gz)")
    p.add_argument("--first-step", type=int_arg(0, MAX_STEP), metavar="N", help=first_step_help)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_trim)
    return parser


_WRITES_RESULTS = frozenset({_cmd_summarize, _cmd_diff, _cmd_merge, _cmd_trim})
"""Commands whose files are their result: each runs in :func:`~profwin.atomic.all_or_nothing`, so
one stopped (Ctrl-C, SIGTERM) leaves none of them, even one already renamed
into place. The others keep what they did (``demo``: the window recorded, as a session keeps it on an early
exit; ``collect``: what arrived; ``start``/``stop``: their own
state and rollback)."""


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(_ray_address_first(sys.argv[1:] if argv is None else argv))
    if args.func in _WRITES_RESULTS:
        with all_or_nothing():
            return int(args.func(args))
    return int(args.func(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``profwin``; errors are one line and a documented exit code (see :mod:`profwin.cli_runner`)."""
    return run_cli(_main, argv, prog="profwin")


if __name__ == "__main__":
    sys.exit(main())
