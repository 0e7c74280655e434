"""Run in the cached Ray environment: a three-node Ray cluster on this machine, a torch
``profwin.Session`` per node, collection and in-place summaries, and the faults.

    python cluster_checks.py WORKDIR      # prints one line: PROFWIN-REPORT {json}

Nodes on one machine share its file system, so "only that node holds the file" is made true
here: each node is started with its own ``PROFWIN_NODE_DIR`` (a raylet environment variable, so
every worker on that node sees it and no other process does), the engines write there, and the
collecting process names files only as ``$PROFWIN_NODE_DIR/...``, expanded on each node. An audit
hook records every file this process opens, lists or globs under the nodes' folders while it
collects and summarizes: the report carries what it saw (the test wants nothing). Faults are
made by the nodes themselves (a task on the node removes its file) or by Ray (a node is removed
without grace, its raylet killed), never by this process touching the nodes' folders.

No fault bets on timing: each lands while the copy is provably under way. The node holds its
reads of the file past the first chunk (``node_site/sitecustomize.py``: they wait on a FIFO the
node's engine holds open for the test), the fault is made once a read waits there, and only then
is the hold released: the copy cannot have ended, however fast or slow anything ran.
"""

from __future__ import annotations

import contextlib
import filecmp
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORK = Path(sys.argv[1]).resolve()
NODES = WORK / "nodes"
watching = False
seen_opens: list[str] = []


def audit(event: str, args: tuple[Any, ...]) -> None:
    if threading.current_thread().name == "fault":
        return
    if watching and event in ("open", "os.listdir", "os.scandir", "glob.glob") and args:
        path = args[0]
        if isinstance(path, (str, bytes, os.PathLike)) and str(os.fsdecode(path)).startswith(str(NODES)):
            seen_opens.append(f"{event} {os.fsdecode(path)}")


sys.addaudithook(audit)

import ray  # noqa: E402
from local_cluster import local_cluster  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ports import free_port  # noqa: E402  (standard library only: the suite's one way to pick a port)

import profwin_ray  # noqa: E402
from profwin.cli import main as profwin_main  # noqa: E402


def leftovers(dest: Path) -> list[str]:
    return sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if ".partial" in p.name)


def identical(dest: Path, node_dirs: dict[str, Path], sub: str) -> dict[str, bool]:
    """Each collected file against the node's original, byte by byte (read after collecting)."""
    return {
        f"{node}/{p.name}": filecmp.cmp(p, node_dirs[node] / sub / p.name, shallow=False)
        for node in node_dirs
        for p in sorted((dest / node).glob("*"))
        if not p.name.startswith(".")
    }


def collect_while(
    dest: Path, by_label: dict[str, Path], engine: Any, name: str, fault: Callable[[], object], release: bool = True
) -> dict[str, Any]:
    """Collect ``$PROFWIN_NODE_DIR/big/*`` into ``dest`` (audited), doing ``fault`` once the
    node of ``engine`` holds its read of ``name`` past the first chunk, then letting it go on (a
    node that is killed lets go by itself); the results, leftovers and byte comparison."""
    global watching
    ray.get(engine.hold.remote(name), timeout=600)  # the first call: the actor may still be starting

    def make_fault() -> None:
        ray.get(engine.wait_held.remote(name), timeout=600)
        fault()
        if release:
            ray.get(engine.release.remote(name), timeout=600)

    doer = threading.Thread(target=make_fault, name="fault")  # the test's instrument, not audited
    doer.start()
    watching = True
    result = profwin_ray.collect("$PROFWIN_NODE_DIR/big/*", dest, chunk_bytes=16 << 10)
    watching = False
    doer.join()
    return {**result.to_dict(), "leftovers": leftovers(dest), "identical": identical(dest, by_label, "big")}


def _run(cmd: list[str]) -> dict[str, Any]:
    """A ``profwin`` command line in its own process: exit code, stderr, wall seconds."""
    began = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    return {"code": done.returncode, "stderr": done.stderr[-3000:], "wall_s": round(time.monotonic() - began, 2)}


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = profwin_main(list(argv))
    return code, json.loads(out.getvalue())


def normalized(data: Any) -> Any:
    """A summary with each file's path cut to its name (the node's path vs. the collected one)."""
    if isinstance(data, dict):
        return {
            k: Path(v).name if k == "path" and isinstance(v, str)
            else [Path(p).name for p in v] if k == "parts" and isinstance(v, list)
            else normalized(v)
            for k, v in data.items()
        }  # fmt: skip
    if isinstance(data, list):
        return [normalized(v) for v in data]
    return data


def main() -> None:
    global watching
    report: dict[str, Any] = {}
    began = time.monotonic()
    with local_cluster(NODES, nodes=3) as local:
        report["cluster_up_s"] = round(local.up_s, 1)
        names, engines, label, cluster = local.names, local.engines, local.labels, local.cluster
        handles, dirs = local.handles, local.dirs
        report["engine_dirs"] = {n: ray.get(engines[n].where.remote()) for n in names}
        report["traces"] = {n: ray.get(engines[n].record.remote("2:6", 9)) for n in names}
        by_label = {label[n]: dirs[n] for n in names}

        # 1. collect, 2. again (skips), 3. summarize in place vs. locally: audited
        watching = True
        first = profwin_ray.collect("$PROFWIN_NODE_DIR/traces/*", WORK / "collected")
        again = profwin_ray.collect("$PROFWIN_NODE_DIR/traces/*", WORK / "collected")
        in_place_code, in_place = cli("summarize", "--ray", cluster.address, "$PROFWIN_NODE_DIR/traces", "--json")
        travelled: list[Any] = []
        profwin_ray.summarize(["$PROFWIN_NODE_DIR/traces"], travelled=travelled)
        watching = False
        report["collect"] = first.to_dict()
        report["again"] = again.to_dict()
        report["identical"] = identical(WORK / "collected", by_label, "traces")
        collected = sorted(str(p) for p in (WORK / "collected").glob("*/*") if not p.name.startswith("."))
        local_code, local = cli("summarize", *collected, "--json")
        report["summarize"] = {
            "in_place_code": in_place_code,
            "local_code": local_code,
            "equal": normalized(in_place) == normalized(local),
            "ranks": [r["rank"] for r in local.get("ranks", [])],
            "summary_bytes": travelled[0].bytes,
            "trace_bytes": first.bytes_moved,
        }

        # 3c. two profiling sessions per node in one folder: the session choice, in place and on
        # the collected files. The newer session (by file time) is recorded second but its trace
        # name sorts first, so the copies are written in the other order: the collected files
        # must keep the nodes' file times for "each rank's newest" to choose the same.
        for n in names:
            ray.get(engines[n].record.remote("2:6", 8, sub="sessions"))
            ray.get(engines[n].record.remote("1:4", 8, sub="sessions"))
        report["session_ids"] = {n: ray.get(engines[n].sessions.remote("sessions")) for n in names}
        watching = True
        collected_sessions = profwin_ray.collect("$PROFWIN_NODE_DIR/sessions/*", WORK / "sessions")
        watching = False
        files = sorted(str(p) for p in (WORK / "sessions").glob("*/*") if not p.name.startswith("."))
        older = {ids[name] for ids in report["session_ids"].values() for name in ids if "w2-6" in name}
        head_older = next(i for name, i in report["session_ids"]["head"].items() if "w2-6" in name)
        head_file = next(name for name in report["session_ids"]["head"] if "w2-6" in name)
        cases = {
            "newest": [],
            "one": ["--session", head_older],
            "prefix": ["--session", head_older[:-2]],
            "nope": ["--session", "nope"],
        }
        sessions: dict[str, Any] = {"collected_ok": collected_sessions.ok, "older": sorted(older)}
        for case, extra in cases.items():
            watching = True
            code, in_place = cli("summarize", "--ray", cluster.address, "$PROFWIN_NODE_DIR/sessions", *extra, "--json")
            watching = False
            local_code, local = cli("summarize", *files, *extra, "--json")
            sessions[case] = {
                "in_place_code": code, "local_code": local_code, "equal": normalized(in_place) == normalized(local),
                "in_place": normalized(in_place),
            }  # fmt: skip
        for case, extra in {"file": ["--session", head_older], "file_nope": ["--session", "nope"]}.items():
            one = f"$PROFWIN_NODE_DIR/sessions/{head_file}"  # on the head node only
            watching = True
            code, in_place = cli("summarize", "--ray", cluster.address, one, *extra, "--json")
            watching = False
            local_file = str(WORK / "sessions" / label["head"] / head_file)
            local_code, local = cli("summarize", local_file, *extra, "--json")
            sessions[case] = {
                "in_place_code": code, "local_code": local_code, "equal": normalized(in_place) == normalized(local),
                "in_place": normalized(in_place),
            }  # fmt: skip
        report["sessions"] = sessions

        # 3d. a long window in parts (profwin.parts): every part comes back, and the parts of each
        # rank read as one trace, in place and on the collected files alike
        report["parts_written"] = {n: ray.get(engines[n].record.remote("0:10", 10, sub="parts", part_steps=4)) for n in names}
        watching = True
        collected_parts = profwin_ray.collect("$PROFWIN_NODE_DIR/parts/*", WORK / "parts")
        code, in_place = cli("summarize", "--ray", cluster.address, "$PROFWIN_NODE_DIR/parts", "--json")
        watching = False
        local_code, local = cli("summarize", str(WORK / "parts"), "--json")
        report["parts"] = {
            "collected_ok": collected_parts.ok,
            "identical": identical(WORK / "parts", by_label, "parts"),
            "collected": sorted(p.name for p in (WORK / "parts").glob("*/*") if not p.name.startswith(".")),
            "in_place_code": code, "local_code": local_code, "equal": normalized(in_place) == normalized(local),
            "in_place": normalized(in_place),
        }  # fmt: skip

        # 3b. a worker on n1 delivers its trace to the head node (where this driver runs)
        (n1_trace,) = report["traces"]["n1"]
        delivered = ray.get(engines["n1"].deliver.remote(n1_trace, str(WORK / "delivered")))
        on_head = ray.get(engines["head"].deliver.remote(report["traces"]["head"][0], str(WORK / "delivered")))
        report["deliver"] = {
            "n1": delivered,
            "head": on_head,
            "identical": filecmp.cmp(WORK / "delivered" / n1_trace, dirs["n1"] / "traces" / n1_trace, shallow=False),
            "listing": sorted(p.name for p in (WORK / "delivered").iterdir()),
        }

        # 4. a file removed mid-copy (by its node), 4b. one that grows mid-copy
        for n in names:
            ray.get(engines[n].write.remote("a.bin", 64 << 10))
        ray.get(engines["n1"].write.remote("b.bin", 1 << 20))
        report["removed"] = collect_while(
            WORK / "removed", by_label, engines["n1"], "b.bin", lambda: ray.get(engines["n1"].remove.remote("b.bin"))
        )
        ray.get(engines["n1"].write.remote("e.bin", 1 << 20))
        report["grown"] = collect_while(
            WORK / "grown", by_label, engines["n1"], "e.bin", lambda: ray.get(engines["n1"].append.remote("e.bin", 4096))
        )
        ray.get(engines["n1"].remove.remote("e.bin"))

        # 5. a node killed mid-copy (its hold goes with it)
        ray.get(engines["n2"].write.remote("c.bin", 1 << 20))
        report["killed"] = collect_while(
            WORK / "killed", by_label, engines["n2"], "c.bin", lambda: cluster.remove_node(handles["n2"], allow_graceful=False),
            release=False,
        )  # fmt: skip

        # 6. Ctrl-C: `profwin collect` in its own process, SIGINT while a file is on its way
        ray.get(engines["head"].write.remote("d.bin", 1 << 20))
        ray.get(engines["head"].hold.remote("d.bin"))
        dest = WORK / "interrupted"
        cmd = [sys.executable, "-m", "profwin", "collect", "--ray", cluster.address, "--from", "$PROFWIN_NODE_DIR/big/*"]
        cmd += ["--to", str(dest), "--chunk-bytes", "1024", "--json"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ray.get(engines["head"].wait_held.remote("d.bin"), timeout=600)  # the copy of d.bin is under way, and waits
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        ray.get(engines["head"].release.remote("d.bin"), timeout=600)
        try:
            printed = json.loads(out) if out.strip() else None
        except ValueError:  # not one JSON document: kept as text, for the test to show (it wants the document)
            printed = out[-3000:]
        report["interrupted"] = {
            "code": proc.returncode,
            "stdout": printed,
            "stderr": err[-2000:],
            "leftovers": leftovers(dest),
            "identical": identical(dest, by_label, "big"),
        }

        # 6b. links in a node's folder are neither followed nor copied
        secret = WORK / "secret"
        secret.mkdir()
        (secret / "shadow").write_bytes(b"not to be copied")
        for n in ("head", "n1"):
            ray.get(engines[n].write.remote("real.bin", 1024, sub="links"))
            ray.get(engines[n].link.remote("shadow.bin", str(secret / "shadow")))
            ray.get(engines[n].link.remote("linked", str(secret)))
        links = profwin_ray.collect("$PROFWIN_NODE_DIR/links/**", WORK / "links")
        report["links"] = {
            **links.to_dict(),
            "found": sorted(str(p.relative_to(WORK / "links")) for p in (WORK / "links").rglob("*")),
        }

        # 6d. a link planted in a collect destination refuses that one file; the rest arrive
        planted = WORK / "planted"
        (planted / label["head"]).mkdir(parents=True)
        (planted / label["head"] / "real.bin").symlink_to(secret / "shadow")
        collected = profwin_ray.collect("$PROFWIN_NODE_DIR/links/**", planted)
        report["planted"] = {
            **collected.to_dict(),
            "secret": (secret / "shadow").read_text(),
            "link_kept": (planted / label["head"] / "real.bin").is_symlink(),
            "n1_identical": filecmp.cmp(planted / label["n1"] / "real.bin", dirs["n1"] / "links" / "real.bin", shallow=False),
        }

        # 6c. bounds a user can pass, and an address where no cluster is
        ray_cli = [sys.executable, "-m", "profwin", "collect", "--from", "$PROFWIN_NODE_DIR/big/*", "--to", str(WORK / "bounds")]
        report["chunk_bytes"] = {
            size: _run([*ray_cli, "--ray", cluster.address, "--chunk-bytes", size]) for size in ("0", str(2**62))
        }
        report["no_cluster"] = _run([*ray_cli, "--ray", f"127.0.0.1:{free_port()}"])

        # 6e. a process that was not a Ray driver is not one after collect and summarize (Ray's
        # driver thread prints on stdout when it likes: after a command's JSON document too);
        # this one, a driver before, still is
        probe = (
            "import sys, ray, profwin_ray\n"
            "profwin_ray.collect('$PROFWIN_NODE_DIR/links/**', sys.argv[2], address=sys.argv[1])\n"
            "after_collect = ray.is_initialized()\n"
            "profwin_ray.summarize(['$PROFWIN_NODE_DIR/sessions'], address=sys.argv[1])\n"
            "print('CONNECTED', after_collect, ray.is_initialized())\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe, cluster.address, str(WORK / "probe")], capture_output=True, text=True, timeout=300
        )
        report["left_connected"] = {
            "code": done.returncode,
            "printed": [line for line in done.stdout.splitlines() if line.startswith("CONNECTED")],
            "stderr": done.stderr[-2000:],
            "driver_still": ray.is_initialized(),
        }
        report["labels"] = label
        report["audit"] = seen_opens

        # 7. verl's relocation on a replica with PROFWIN_VERL_DELIVER=ray (last: a failure here is
        # this check's alone). The nodes share this machine's disk, so save_path on the head node
        # is the replica's own folder: what is proven is that the files went through delivery.
        try:
            (n1_trace,) = report["traces"]["n1"]
            save_path = dirs["n1"] / "verl"
            returned = ray.get(engines["n1"].relocate.remote(str(save_path), n1_trace))
            manifest = json.loads((save_path / ".profwin-collect.json").read_text())
            report["verl"] = {
                "returned": returned,
                "expected": [str(save_path / f"rollout-replica1_{n1_trace}")],
                "identical": filecmp.cmp(returned[0], dirs["n1"] / "traces" / n1_trace, shallow=False),
                "manifest": sorted(k for k in manifest if k != "format"),  # files the receiving task copied (none: already there)
            }
        except Exception as exc:
            report["verl"] = {"error": f"{type(exc).__name__}: {exc}"}
    report["wall_s"] = round(time.monotonic() - began, 1)
    print("PROFWIN-REPORT " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
