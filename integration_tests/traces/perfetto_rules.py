"""The rules of Perfetto's JSON trace importer that ``profwin merge`` relies on, checked with the
standard library's ``json`` (independently of profwin's reader). docs/traces.md lists them.

No Perfetto runs here (its trace processor is a binary fetched from outside the package
registries), so the merged traces are held to the rules themselves.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

# The Trace Event Format's phases.
PHASES = set("BEXiIbneCMsftPOND(R)") | {"v", "V", "c"}
METADATA_NAMES = {"process_name": str, "thread_name": str, "process_sort_index": int, "thread_sort_index": int}


def load(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)  # type: ignore[no-any-return]


def check_perfetto_trace(path: Path) -> dict[str, Any]:
    """Assert the merged trace at ``path`` follows the rules; return it.

    1. The JSON Object Format: an object whose ``traceEvents`` is a list (other top-level keys
       are metadata, ignored); gzip is read as is (``.json.gz``).
    2. Every event has a known ``ph``; every event but metadata a numeric ``ts`` (microseconds)
       and integer ``pid`` and ``tid`` (a process and a thread track); complete events a
       numeric ``dur`` >= 0.
    3. Metadata events (``ph: M``) name a process or thread (``process_name``/``thread_name``,
       ``args.name`` a string) or order them (``*_sort_index``, ``args.sort_index`` an int),
       and each thread a named process holds is named.
    4. Flow events (``ph`` s, t, f) pair by ``id``: one id never spans two processes, since
       Perfetto binds a flow's ends by id across the whole file.
    """
    trace = load(path)
    assert isinstance(trace, dict), "JSON Object Format"
    events = trace.get("traceEvents")
    assert isinstance(events, list), "JSON Object Format"
    assert trace.get("displayTimeUnit", "ms") in ("ms", "ns")
    named_processes: set[int] = set()
    named_threads: set[tuple[int, int]] = set()
    used_threads: set[tuple[int, int]] = set()
    flows: dict[Any, set[int]] = defaultdict(set)
    for event in events:
        assert isinstance(event, dict), event
        ph = event.get("ph")
        assert ph in PHASES, event
        if ph == "M":
            name = event.get("name")
            assert name in METADATA_NAMES, event
            value = event["args"]["name" if name.endswith("_name") else "sort_index"]
            assert type(value) is METADATA_NAMES[name], event
            assert type(event.get("pid")) is int, event
            if name == "process_name":
                named_processes.add(event["pid"])
            elif name == "thread_name":
                named_threads.add((event["pid"], event["tid"]))
            continue
        assert type(event.get("ts")) in (int, float), event
        assert type(event.get("pid")) is int, event
        assert type(event.get("tid")) is int, event
        used_threads.add((event["pid"], event["tid"]))
        if ph == "X":
            assert type(event.get("dur", 0)) in (int, float), event
            assert event.get("dur", 0) >= 0, event
        if ph in ("s", "t", "f"):
            flows[event["id"]].add(event["pid"])
    assert {pid for pid, _ in used_threads} <= named_processes
    assert used_threads <= named_threads
    shared = {flow: pids for flow, pids in flows.items() if len(pids) > 1}
    assert not shared, f"flow ids in several processes: {dict(list(shared.items())[:5])}"
    return trace


def by_process(trace: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """The non-metadata events of each process, in file order."""
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for event in trace["traceEvents"]:
        if event.get("ph") != "M":
            found[event["pid"]].append(event)
    return dict(found)


def names(events: list[dict[str, Any]]) -> Counter[tuple[Any, Any, Any]]:
    """Each event's ``(ph, cat, name)``, counted: what a merge must keep of every event."""
    return Counter((e.get("ph"), e.get("cat"), e.get("name")) for e in events)
