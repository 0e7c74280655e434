"""profwin-ray on a real three-node Ray cluster on this machine (``cluster_checks.py``, run once
in the cached Ray environment; each test reads its part of the report).

What is real: Ray 2.60 (a head and two raylets, ``ray.cluster_utils.Cluster``), node-affinity
tasks, a torch ``profwin.Session`` per node as a Ray actor, the ``profwin`` command. What is
simulated: three nodes on one machine; each node's folder is its own because only that node's
processes know where it is (see the script's docstring), and the collecting process is audited.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import RayDriver

pytestmark = [pytest.mark.slow, pytest.mark.ray]

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def report(ray_driver: RayDriver, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    done, why = ray_driver("cluster_checks.py", tmp_path_factory.mktemp("ray-cluster"))
    lines = [line for line in done.stdout.splitlines() if line.startswith("PROFWIN-REPORT ")]
    assert done.returncode == 0, why
    assert lines, why
    data: dict[str, Any] = json.loads(lines[0].removeprefix("PROFWIN-REPORT "))
    data["stderr"] = done.stderr  # the collecting process's: what Ray printed there
    print(f"cluster up in {data['cluster_up_s']} s, checks in {data['wall_s']} s")
    return data


def _by_node(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in result["nodes"]}


def test_every_nodes_traces_arrive_byte_identical(report: dict[str, Any]) -> None:
    assert report["audit"] == []  # the collecting process never opened or listed a node's folder
    first = report["collect"]
    assert first["ok"], first
    nodes = _by_node(first)
    assert sorted(nodes) == sorted(report["labels"].values())
    for name, label in report["labels"].items():
        files = nodes[label]["files"]
        assert [f["name"] for f in files] == report["traces"][name]  # each node's own trace, under <node>/
        assert all(f["status"] == "copied" and len(f["sha256"]) == 64 for f in files)
    assert report["identical"], report
    assert all(report["identical"].values()), report["identical"]
    assert len(report["identical"]) == sum(len(t) for t in report["traces"].values())


def test_a_second_collect_skips_what_arrived(report: dict[str, Any]) -> None:
    again = report["again"]
    assert again["ok"]
    assert again["bytes_moved"] == 0
    assert {f["status"] for n in again["nodes"] for f in n["files"]} == {"skipped"}


def test_summarize_in_place_equals_summarizing_the_collected_files(report: dict[str, Any]) -> None:
    summary = report["summarize"]
    assert summary["in_place_code"] == 0
    assert summary["local_code"] == 0
    assert summary["ranks"] == [0, 1, 2]
    assert summary["equal"]
    assert summary["summary_bytes"] < summary["trace_bytes"]


def test_summarize_in_place_chooses_the_session_as_summarize_does_locally(report: dict[str, Any]) -> None:
    """Two sessions per node in one folder (2:6 recorded first, then 1:4): with ``--ray`` the
    same choice as ``profwin summarize`` of the collected files: each rank's newest by default,
    said so; ``--session ID`` or a prefix; an unknown id the same error."""
    sessions = report["sessions"]
    assert sessions["collected_ok"]
    for case in ("newest", "one", "prefix", "nope", "file", "file_nope"):
        assert sessions[case]["equal"], (case, sessions[case])
    newest = sessions["newest"]
    assert (newest["in_place_code"], newest["local_code"]) == (0, 0)
    assert [(r["rank"], r["steps"]) for r in newest["in_place"]["ranks"]] == [(0, 3), (1, 3), (2, 3)]  # the 1:4 sessions
    (note,) = [n for n in newest["in_place"]["notes"] if "several profiling sessions" in n]
    newer = sorted({i for ids in report["session_ids"].values() for name, i in ids.items() if "w1-4" in name})
    assert note == (
        "up to 2 traces per rank here (several profiling sessions); summarizing each rank's newest "
        f"(session {', '.join(newer)}); choose another with --session ID"
    )
    head_older = next(i for name, i in report["session_ids"]["head"].items() if "w2-6" in name)
    for case in ("one", "prefix"):
        chosen = sessions[case]
        assert (chosen["in_place_code"], chosen["local_code"]) == (0, 0)
        assert [(r["rank"], r["steps"]) for r in chosen["in_place"]["ranks"]] == [(0, 4)]  # head's 2:6 session only
        assert f"session {head_older}: 1 of 6 traces" in chosen["in_place"]["notes"]
    nope = sessions["nope"]
    assert (nope["in_place_code"], nope["local_code"]) == (2, 2)
    assert nope["in_place"]["path"] == "session"
    assert nope["in_place"]["error"].startswith("session: 'nope' matches no session; the traces hold: ")
    one = sessions["file"]
    assert (one["in_place_code"], one["local_code"]) == (0, 0)
    assert [s["number"] for s in one["in_place"]["steps"]] == [2, 3, 4, 5]  # one trace: its own summary
    assert (sessions["file_nope"]["in_place_code"], sessions["file_nope"]["local_code"]) == (2, 2)


def test_a_long_windows_parts_come_back_together_and_read_as_one(report: dict[str, Any]) -> None:
    """Window 0:10 in parts of 4 steps on each node: the three parts of every node arrive, and
    ``summarize --ray`` reads each rank's parts as one trace of 10 steps, as on the collected files."""
    parts = report["parts"]
    written = report["parts_written"]
    assert all(len(names) == 3 for names in written.values()), written
    assert parts["collected_ok"]
    assert all(parts["identical"].values()), parts["identical"]
    assert parts["collected"] == sorted(name for names in written.values() for name in names)
    assert (parts["in_place_code"], parts["local_code"]) == (0, 0)
    assert parts["equal"]
    assert [(r["rank"], r["steps"]) for r in parts["in_place"]["ranks"]] == [(0, 10), (1, 10), (2, 10)]
    assert all(len(s["trace"]["parts"]) == 3 for s in parts["in_place"]["summaries"])


def test_a_file_removed_mid_copy_fails_that_node_only(report: dict[str, Any]) -> None:
    removed = report["removed"]
    nodes = _by_node(removed)
    n1 = nodes[report["labels"]["n1"]]
    assert not n1["ok"]
    files = {f["name"]: f for f in n1["files"]}
    assert files["a.bin"]["status"] == "copied"
    assert files["b.bin"]["status"] == "failed"
    assert "removed during the copy" in files["b.bin"]["message"]
    assert files["b.bin"]["bytes"] == 16 << 10  # it was on its way: its first chunk had arrived
    assert all(nodes[report["labels"][n]]["ok"] for n in ("head", "n2"))
    assert removed["leftovers"] == []
    assert sorted(removed["identical"]) == sorted(f"{label}/a.bin" for label in report["labels"].values())
    assert all(removed["identical"].values())


def test_a_node_killed_mid_copy_keeps_what_arrived(report: dict[str, Any]) -> None:
    killed = report["killed"]
    nodes = _by_node(killed)
    n2 = nodes[report["labels"]["n2"]]
    assert not n2["ok"]
    assert "node" in n2["message"]
    files = {f["name"]: f for f in n2["files"]}
    assert files["a.bin"]["status"] == "copied"
    assert files["c.bin"]["status"] == "failed"
    assert all(nodes[report["labels"][n]]["ok"] for n in ("head", "n1"))
    assert killed["leftovers"] == []
    assert f"{report['labels']['n2']}/c.bin" not in killed["identical"]
    assert killed["identical"][f"{report['labels']['n2']}/a.bin"]
    assert all(killed["identical"].values())


def test_ctrl_c_keeps_whole_files_and_says_so(report: dict[str, Any]) -> None:
    stopped = report["interrupted"]
    assert stopped["code"] == 130, stopped["stderr"]
    result = stopped["stdout"]
    assert isinstance(result, dict), f"stdout is not one JSON document: {result!r}"
    assert result["interrupted"]
    assert not result["ok"]
    head = _by_node(result)[report["labels"]["head"]]
    files = {f["name"]: f for f in head["files"]}
    assert files["a.bin"]["status"] == "copied"
    assert files["d.bin"]["status"] == "failed"
    assert head["message"] == "interrupted"
    assert stopped["leftovers"] == []
    assert f"{report['labels']['head']}/d.bin" not in stopped["identical"]
    assert all(stopped["identical"].values())


def test_collect_and_summarize_leave_the_process_connected_as_they_found_it(report: dict[str, Any]) -> None:
    """A process that was not a Ray driver is not one after ``collect`` or ``summarize`` (the
    ``profwin`` command's case: Ray's driver thread printed a node it marked dead on stdout after
    ``collect --json``'s document); a driver calling them stays connected."""
    left = report["left_connected"]
    assert left["code"] == 0, left["stderr"]
    assert left["printed"] == ["CONNECTED False False"], left["stderr"]
    assert left["driver_still"]


def test_a_file_that_grows_mid_copy_fails_that_file_only_in_one_line(report: dict[str, Any]) -> None:
    grown = report["grown"]
    n1 = _by_node(grown)[report["labels"]["n1"]]
    files = {f["name"]: f for f in n1["files"]}
    assert files["a.bin"]["status"] == "copied"
    assert files["e.bin"]["status"] == "failed"
    assert files["e.bin"]["message"].endswith("e.bin changed during the copy (size 1048576 -> 1052672)")
    assert grown["leftovers"] == []
    # No fault of any kind let Ray's own text through: no task traceback, no "unhandled error" dump
    # of a chunk in flight, in a result or on the collecting process's stderr.
    texts = [json.dumps(report[case]) for case in ("removed", "grown", "killed", "interrupted")] + [report["stderr"]]
    for text in texts:
        assert "Traceback" not in text
        assert "Unhandled error" not in text
        assert "ray::" not in text


def test_links_in_a_nodes_folder_are_neither_followed_nor_copied(report: dict[str, Any]) -> None:
    links = report["links"]
    nodes = _by_node(links)
    labels = [report["labels"][n] for n in ("head", "n1")]  # n2 was removed above
    for label in labels:
        assert nodes[label]["ok"], nodes[label]
        # The link to a secret file and the linked folder: neither followed nor copied.
        assert [f["name"] for f in nodes[label]["files"]] == ["real.bin"]
    found = sorted(p for p in links["found"] if not p.startswith("."))
    assert found == sorted([*labels, *(f"{label}/real.bin" for label in labels)])


def test_a_link_planted_in_the_destination_refuses_that_file_only(report: dict[str, Any]) -> None:
    """It ended the whole collection (an exception out of the copy); now that file is refused and
    reported, nothing is written through the link, and the other node's file arrives."""
    planted = report["planted"]
    nodes = _by_node(planted)
    head, n1 = (report["labels"][n] for n in ("head", "n1"))
    (refused,) = nodes[head]["files"]
    assert (refused["name"], refused["status"]) == ("real.bin", "failed")
    assert refused["message"].endswith(f"{head}/real.bin' is a symbolic link; profwin never writes through one")
    assert not nodes[head]["ok"]
    assert [(f["name"], f["status"]) for f in nodes[n1]["files"]] == [("real.bin", "copied")]
    assert planted["n1_identical"]
    assert planted["secret"] == "not to be copied"  # never written through
    assert planted["link_kept"]


def test_chunk_bytes_out_of_bounds_and_no_cluster_are_one_clear_error(report: dict[str, Any]) -> None:
    too_small, too_large = report["chunk_bytes"]["0"], report["chunk_bytes"][str(2**62)]
    assert too_small["code"] == 2
    assert too_small["stderr"] == (
        "profwin: error: argument --chunk-bytes: must be an integer >= 1024 (got '0') (see: profwin collect --help)\n"
    )
    assert too_large["code"] == 2
    assert too_large["stderr"] == (
        f"profwin: error: chunk_bytes: must be an integer number of bytes from 1,024 to 1,073,741,824 (got {2**62})\n"
    )
    none = report["no_cluster"]  # before: Ray retried for ever (a 30 s wait for its GCS, again and again)
    assert none["code"] == 2
    assert "cannot connect to the Ray cluster at '127.0.0.1:" in none["stderr"]
    assert "nothing answers at" in none["stderr"]
    assert "Traceback" not in none["stderr"]
    print(f"profwin collect --ray with no cluster there: {none['wall_s']} s")


def test_a_worker_delivers_its_files_to_the_head_node(report: dict[str, Any]) -> None:
    deliver = report["deliver"]
    (n1_trace,) = report["traces"]["n1"]
    assert deliver["n1"]["ok"], deliver
    assert [(f["name"], f["status"]) for f in deliver["n1"]["files"]] == [(n1_trace, "copied")]
    assert deliver["identical"]
    assert deliver["listing"] == [".profwin-collect.json", n1_trace]  # flat: no <node>/ folder
    assert [f["status"] for f in deliver["head"]["files"]] == ["skipped"]  # already on the head node


def test_verl_relocation_delivers_through_ray_when_switched_on(report: dict[str, Any]) -> None:
    verl = report["verl"]
    assert "error" not in verl, verl
    assert verl["returned"] == verl["expected"]
    assert verl["identical"]
    # The delivery's receiving task on the head node ran (only it writes this record in
    # save_path) and found the file already there with the same checksum: on this one machine the
    # head node's save_path is the replica's. The cross-node copy itself is the test above.
    assert verl["manifest"] == []


def test_scale_out_bench_smoke(ray_python: Path) -> None:
    """``benchmarks/scale_out_bench.py --smoke`` runs end to end (it starts its own two-node
    cluster in the cached Ray environment, built above); nothing about timing is asserted."""
    done = subprocess.run(
        [sys.executable, str(HERE.parent.parent / "benchmarks" / "scale_out_bench.py"), "--smoke", "--json"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert [r["nodes"] for r in rows] == [1, 2]
    assert all(0 < r["b_bytes"] < r["a_bytes"] for r in rows)  # only summaries travel in (b)
    assert [len(r["b_node_cpu_s"]) for r in rows] == [1, 2]  # every node's share of the work, measured there
