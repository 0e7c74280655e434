"""Token windows on a real SGLang 0.5.23 server, judged against SGLang's own record of each batch.

The server runs profwin-sglang's server plugin (token windows are decided there: these tests are
about the plugin), chunked prefill of 64 tokens and at most 4 running requests, with and without
``--enable-mixed-chunk`` (SGLang's default is off: a request is admitted in a prefill batch of its
own, which decodes nothing; on, the running requests decode in the same batch); batches that
stagger (long prompts chunked, more requests than may run, prompts of different lengths,
``n = 3`` samples, early finishes, admissions while the window is open, windows from token 0) are
sent while a token window is open, and a session is opened while requests decode. batch_record.py,
a test-harness plugin in the same server, writes SGLang's own account of every batch (its
``output_ids`` counts and ``extend_lens``) and of the batch each profile request came before; the
expected steps come from that record alone (integration_tests/token_rule.py), and each trace must
hold exactly those batches (SGLang's own ``step[...]`` spans, one per batch) with profwin's
annotation of what each held, every field equal to the record's. A third server retracts a running
request every few batches, and a request stops on a stop token: under SGLang's overlap scheduler
(on here) both leave a token SGLang computes and drops, which the record shows and profwin counts.
"""

from __future__ import annotations

import json
import shutil
import threading
import urllib.request
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, Window
from profwin_sglang import session
from profwin_traces import summarize

from ..token_rule import expected_steps, fields, held, produced_by_step
from .conftest import ADMIN_KEY, HERE, Server, _serve

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

# name -> (window, [(prompt words, max new tokens, n), ...])
SCENARIOS: dict[str, tuple[str, list[tuple[int, int, int]]]] = {
    "chunked-prefill": ("3:9", [(45, 14, 1)] * 4),
    "lengths-and-early-finish": ("2:7", [(6 + 9 * i, (3, 12, 5, 9, 7, 4)[i], 1) for i in range(6)]),
    "n-samples": ("1:5", [(20, 8, 3), (33, 8, 3)]),
    "admission": ("2:6", [(12, 9, 1)] * 9),
    "open-ended": ("4:", [(10, 8, 1)] * 3),
    "never-reached": ("30:40", [(8, 4, 1)] * 2),
    # Token 0 in the window, with another request's partial chunk in the same prefill batch.
    # (chunks of 64: the long prompt's last chunk shares a batch with the short one's first part.)
    "from-token-0": ("0:3", [(150, 6, 1), (45, 6, 1)]),
    # 7 requests of 70..150 prompt words, at most 4 running: 3 are admitted while the first ones
    # decode tokens 12..19 (the field report's case).
    "admission-mid-window": ("12:20", [(70 + 13 * i, 16 + (i % 3) * 4, 1) for i in range(7)]),
}
MODES = {"stock-chunking": (), "mixed-chunk": ("--enable-mixed-chunk",)}
# Windows on a server that retracts a running request every RETRACT_EVERY batches: 8 requests
# running at once, each retracted about every 8 × RETRACT_EVERY batches and recomputed.
RETRACTION = {"retracted-mid-window": ("20:40", [(30, 80, 1)] * 8), "retracted-from-token-0": ("0:10", [(30, 60, 1)] * 8)}
RETRACT_EVERY = 7
BATCH_SLEEP_S = 0.05  # per batch while a session is opened under traffic (SGLang's /slow_down)


@pytest.fixture(scope="module", params=sorted(MODES))
def recorded_server(
    request: pytest.FixtureRequest, tiny_model: Path, plugin_site: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A server with profwin's plugin and SGLang's batch record (PROFWIN_BATCH_RECORD), in one
    of :data:`MODES`."""
    mode = ("--max-running-requests", "4", *MODES[request.param])
    yield from _recorded(request.param, mode, {}, tiny_model, plugin_site, tmp_path_factory)


@pytest.fixture(scope="module")
def retracting_server(tiny_model: Path, plugin_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A recorded server that retracts a running request every :data:`RETRACT_EVERY` batches, by
    SGLang's own switch for testing retraction (``SGLANG_TEST_RETRACT``: the path a full KV pool
    takes, ``retract_decode``, forced; a pool small enough to retract by itself in a short test
    first makes SGLang admit fewer requests, measured: no retraction in 3 batches of 8 requests
    with 300 tokens of pool)."""
    retract = {"SGLANG_TEST_RETRACT": "1", "SGLANG_TEST_RETRACT_INTERVAL": str(RETRACT_EVERY)}
    yield from _recorded("retraction", ("--max-running-requests", "8"), retract, tiny_model, plugin_site, tmp_path_factory)


def _recorded(
    name: str,
    extra_args: tuple[str, ...],
    environment: dict[str, str],
    tiny_model: Path,
    plugin_site: Path,
    tmp_path_factory: pytest.TempPathFactory,
    *,
    queues: bool = False,
) -> Iterator[Server]:
    """A server ``name`` with profwin's plugin, SGLang's batch record (``batches.txt`` in its
    work folder) and, with ``queues``, its queues before each batch (``queues.txt``)."""
    site = tmp_path_factory.mktemp("token-site")
    shutil.copytree(plugin_site, site, dirs_exist_ok=True)
    info = site / "profwin_batch_record-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: profwin-batch-record\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[sglang.srt.plugins]\nprofwin_batch_record = batch_record:register\n")
    shutil.copy(HERE / "batch_record.py", site / "batch_record.py")
    work = tmp_path_factory.mktemp(f"token-server-{name}")
    record = work / "batches.txt"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PROFWIN_BATCH_RECORD", str(record))
        if queues:
            env.setenv("PROFWIN_BATCH_QUEUES", str(work / "queues.txt"))
        for key, value in environment.items():
            env.setenv(key, value)
        yield from _serve(
            tiny_model,
            work,
            plugin_site=site,
            api_key=ADMIN_KEY,
            extra_args=("--chunked-prefill-size", "64", *extra_args),
        )


def _prompts(batch: list[tuple[int, int, int]], seed: int) -> tuple[list[str], list[dict[str, Any]]]:
    """``batch``'s texts and sampling parameters, the same for the same seed every run."""
    texts = [" ".join(f"w{(seed * 31 + i * 7 + j) % 1000}" for j in range(words)) for i, (words, _, _) in enumerate(batch)]
    params = [
        {"max_new_tokens": tokens, "ignore_eos": True, "temperature": 0 if n == 1 else 1.0, "n": n} for _, tokens, n in batch
    ]
    return texts, params


def _results(server: Server, texts: list[str], params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One /generate of ``texts`` (one list request): SGLang's result for each."""
    body = json.dumps({"text": texts, "sampling_params": params}).encode()
    request = urllib.request.Request(server.url + "/generate", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as reply:
        results: list[dict[str, Any]] = json.loads(reply.read())
    return results


def _generate(server: Server, batch: list[tuple[int, int, int]], seed: int) -> list[int]:
    """One /generate of the whole batch; the tokens each output got."""
    return sorted(r["meta_info"]["completion_tokens"] for r in _results(server, *_prompts(batch, seed)))


def _streamed(server: Server, words: int, tokens: int, seed: int) -> Iterator[int]:
    """One streaming /generate of a prompt of ``words`` words: the request's tokens so far, each
    time the server sends them (through its last)."""
    (text,), (params,) = _prompts([(words, tokens, 1)], seed)
    body = json.dumps({"text": text, "sampling_params": params, "stream": True}).encode()
    request = urllib.request.Request(server.url + "/generate", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as reply:
        for line in reply:
            if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
                yield int(json.loads(line[5:])["meta_info"]["completion_tokens"])


Row = tuple[int, str, dict[str, int], dict[str, int]]  # (forward_iter, mode, tokens so far, prompt tokens prefilled)


def _record(path: Path, after: int) -> list[Row]:
    rows = []
    for line in path.read_text().splitlines():
        ct, mode, *counts = line.split()
        if int(ct) > after and mode != "PROFILE":
            made, prefilled = {}, {}
            for count in counts:
                rid, _, value = count.rpartition("=")
                tokens, _, extend = value.partition("+")
                made[rid] = int(tokens)
                if extend:
                    prefilled[rid] = int(extend)
            rows.append((int(ct), mode, made, prefilled))
    return sorted(rows)


def _recorded_session(server: Server, spec: ProfileSpec, send: Callable[[], Any]) -> dict[str, Any]:
    """``send()`` inside a session of ``spec`` on the idle ``server`` (again after a kineto crash):
    what it returned (``generated``), the session, its warnings, and SGLang's record of every
    batch after it started (``record``, one row per batch, none missing)."""
    result: dict[str, Any] = {}

    def run() -> None:
        before = server.forward_ct()  # the server is idle: session step k is batch before + 1 + k
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with session(server.url, spec, api_key=server.api_key) as s:
                result["generated"] = send()
        result.update(session=s, warnings=[str(w.message) for w in caught], before=before)

    server.retry_on_kineto_crash(run)
    record = _record(Path(str(server.workdir / "batches.txt")), result["before"])
    result["record"] = record
    assert [ct for ct, *_ in record] == list(range(result["before"] + 1, result["before"] + 1 + len(record)))
    result["mode"] = "mixed-chunk" if "--enable-mixed-chunk" in server.extra_args else "stock-chunking"
    return result


def _run(server: Server, name: str, window: str, batch: list[tuple[int, int, int]], tmp_path: Path) -> dict[str, Any]:
    """One scenario: ``batch`` sent at once inside a session of the token window ``window``."""
    spec = ProfileSpec(window=Window.parse(f"{window} tokens"), output_dir=tmp_path, activities=("cpu",), prefix=name)
    return _recorded_session(server, spec, lambda: _generate(server, batch, seed=len(name)))


def _decoding(record: list[Row]) -> list[set[str]]:
    """Each batch's requests that decode in it, from SGLang's record: those without an extend
    length (every row of a DECODE batch, the rows a MIXED batch does not prefill). A request
    recomputed after a retraction prefills."""
    return [set(counts) - set(prefilled) for _, _, counts, prefilled in record]


def _computed(record: list[Row]) -> list[list[int]]:
    """Each batch's token indices as SGLang computed them: the tokens each request kept, and the
    one it computed and dropped. SGLang's overlap scheduler (on here, as on CUDA) schedules a batch
    before the last one's tokens are processed, so a request retracted (or stopped on a stop
    token) meanwhile decodes in that batch, and SGLang drops its token there: in the record, its
    count does not grow (:func:`~integration_tests.token_rule.produced_by_step`)."""
    return produced_by_step([counts for _, _, counts, _ in record], _decoding(record))


def _session_starts(path: Path, after: int) -> list[int]:
    """The batch numbers the session started after ``after`` has for its step 0: the batch after
    the scheduler took each start request (batch_record.py's ``PROFILE START_PROFILE`` lines)."""
    rows = [line.split() for line in path.read_text().splitlines()]
    return [int(ct) for ct, mode, *what in rows if mode == "PROFILE" and what == ["START_PROFILE"] and int(ct) > after]


def _check(result: dict[str, Any], window: str) -> None:
    """``result["record"][first]`` is the session's step 0 (``first`` 0 unless given): the rows
    before it ran before the session started, and their tokens count."""
    record = result["record"]
    first = result.get("first", 0)
    produced = _computed(record)
    decodes = [bool(decoders) for decoders in _decoding(record)]
    steps = expected_steps(window, produced[first:], decodes[first:])
    s = result["session"]
    traces = [a for a in s.artifacts if a.kind == "trace"]
    (outcome,) = s.results
    assert outcome.ok, outcome
    if steps is None:
        assert traces == []
        assert any(f"no trace was written for window {window} tokens" in w for w in result["warnings"]), result["warnings"]
        return
    assert outcome.details["mechanism"] == "tokens"
    assert result["warnings"] == []
    (trace,) = traces
    print(f"window {window} tokens: expected steps {steps.start}:{steps.stop} of {len(record)}, recorded {trace.steps}")
    assert trace.steps == Window(steps.start, steps.stop)
    summary = summarize(trace.path, top=0)
    # SGLang's own step spans, numbered as the session's steps, each with what it held.
    assert summary.producer == "sglang"
    assert [st.number for st in summary.steps] == list(steps)
    labels = [fields(st.tokens.span_name()) for st in summary.steps if st.tokens is not None]
    assert len(labels) == len(steps)
    sglang_spans = _sglang_spans(trace.path)
    assert [(mode, bs) for mode, bs, _ in sglang_spans] == [(record[first + k][1], len(record[first + k][2])) for k in steps]
    for k, (step, annotation, (mode, _, toks)) in enumerate(zip(steps, labels, sglang_spans, strict=True)):
        prefilled = record[first + step][3]
        assert annotation == {
            "window_step": str(k),
            **held(window, produced[first + step]),
            "prefilling": str(len(prefilled)),
            "prefill_tokens": str(sum(prefilled.values())),
            "session_step": str(step),
        }, (step, record[first + step])
        if mode == "EXTEND":  # SGLang's span counts the batch's extend tokens too
            assert toks == sum(prefilled.values()), (step, record[first + step])
    result["recorded"] = steps


def _sglang_spans(path: Path) -> list[tuple[str, int, int]]:
    """SGLang's own ``step[MODE bs=N toks=T]`` spans of a trace, in order: (mode, bs, toks)."""
    from profwin_sglang._plugin import STEP_MARKER

    found = []
    for step in summarize(path, top=0, markers=(STEP_MARKER,)).steps:
        parts = dict(p.split("=") for p in step.label.strip("step[]").split()[1:] if "=" in p)
        found.append((step.label[5:].split()[0], int(parts["bs"]), int(parts.get("toks", 0))))
    return found


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_token_window(recorded_server: Server, tmp_path: Path, name: str) -> None:
    window, batch = SCENARIOS[name]
    result = _run(recorded_server, name, window, batch, tmp_path)
    _check(result, window)
    record = result["record"]
    produced = produced_by_step([counts for _, _, counts, _ in record])
    if name == "lengths-and-early-finish":
        assert result["generated"] == [3, 4, 5, 7, 9, 12]
    if name == "n-samples":
        assert result["generated"] == [8] * 6
    if name == "admission":  # more requests than may run: some start only after others finish
        first_tokens = sorted(s for s, indices in enumerate(produced) for k in indices if k == 0)
        assert first_tokens[-1] - first_tokens[0] >= 9
    if name == "from-token-0":  # the first prefill batch carries the second request's partial chunk
        shared = [row for row in record if row[1] == "EXTEND" and len(row[3]) == 2 and sorted(row[2].values()) == [0, 1]]
        assert shared, record[:6]
    if name == "admission-mid-window":
        _check_the_promise(result, window, produced)


@pytest.mark.parametrize("name", sorted(RETRACTION))
def test_token_window_with_retractions(retracting_server: Server, tmp_path: Path, name: str) -> None:
    """Requests retracted and recomputed while the window is open: the steps recorded and each
    step's annotation are what SGLang computed, its record says (:func:`_computed`), a token it
    dropped included; and there were retractions inside the window (a request's dropped token,
    and its recomputation: a prefill of a request that had tokens already)."""
    window, batch = RETRACTION[name]
    result = _run(retracting_server, name, window, batch, tmp_path)
    _check(result, window)
    record, recorded = result["record"], result["recorded"]
    kept, computed = produced_by_step([counts for _, _, counts, _ in record]), _computed(record)
    dropped = [k for k in recorded if len(computed[k]) > len(kept[k])]
    made: dict[str, int] = {}
    resumed = []
    for step, (_, _, counts, prefilled) in enumerate(record):
        resumed += [step for rid in prefilled if made.get(rid, 0) > 0]
        made.update({rid: max(made.get(rid, 0), n) for rid, n in counts.items()})
    assert dropped, "no token dropped inside the window: the scenario does not test it"
    assert [step for step in resumed if step in recorded], f"no recomputation inside the window {recorded}: {resumed}"
    print(f"window {window}: recorded {recorded.start}:{recorded.stop}, dropped tokens at {dropped}, recomputed at {resumed}")


def _check_the_promise(result: dict[str, Any], window: str, produced: list[list[int]]) -> None:
    """docs/window.md: the requests that opened the window have all their tokens start..end-1
    recorded (unless they finish sooner), admissions while it is open included."""
    record = result["record"]
    start, end = (int(v) for v in window.split(":"))
    recorded = result["recorded"]
    opened = recorded[0]
    # Which request made which token at which step, from SGLang's record alone.
    made: dict[str, int] = {}
    at: dict[tuple[str, int], int] = {}
    for step, (_, _, counts, _) in enumerate(record):
        for rid, total in counts.items():
            for k in range(made.get(rid, 0), total):
                at[rid, k] = step
            made[rid] = max(made.get(rid, 0), total)
    openers = [rid for (rid, k), step in at.items() if step == opened and start <= k < end]
    assert openers
    for rid in openers:
        assert all(at[rid, k] in recorded for k in range(start, min(end, made[rid]))), (rid, recorded)
    # Requests were admitted while the window was open (prefill batches inside it).
    admitted = [k for k in recorded if record[k][3] and all(i == 0 for i in produced[k])]
    if result["mode"] == "stock-chunking":
        assert admitted, "no admission inside the window: the scenario does not test it"
    print(f"window {window}: recorded {recorded.start}:{recorded.stop}, prefill-only steps inside: {admitted}")


def test_a_session_opened_while_requests_decode(recorded_server: Server, tmp_path: Path) -> None:
    """docs/window.md: tokens count from each request's own first token, so a session started on a
    server under traffic opens as soon as a running request produces a token in the window, and
    requests admitted while it is open are held. Three requests decode when the session starts
    (SGLang's record says at which batch the scheduler took the start: the session's step 0); two
    more are sent once the first are at token 102, inside window ``100:180``. The scenario needs
    the batches to be slow beside HTTP: the tiny model decodes a batch in milliseconds, and on a
    loaded machine a request took 20 batches (and, under two busy loops, over 78) from its send to
    its admission, and a session's start over 170. So the test slows the scheduler with SGLang's
    own ``/slow_down`` (a sleep before each batch, "only for testing", undone after): the session
    starts before token 100, the window opens some steps in, and the two are admitted inside it."""
    server = recorded_server
    window = "100:180"
    path = Path(str(server.workdir / "batches.txt"))
    spec = ProfileSpec(window=Window.parse(f"{window} tokens"), output_dir=tmp_path, activities=("cpu",), prefix="midflight")
    result: dict[str, Any] = {}

    def run() -> None:
        assert server.post("/slow_down", {"forward_sleep_time": BATCH_SLEEP_S})[0] == 200
        idle = server.forward_ct()
        with ThreadPoolExecutor(1) as pool, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            decoding = pool.submit(_generate, server, [(30, 200, 1)] * 2, 5)
            # The third request streams: its tokens so far, as the server sends them, pace the test.
            clock = _streamed(server, 30, 200, seed=6)
            next(made for made in clock if made >= 8)
            with session(server.url, spec, api_key=server.api_key) as s:
                next(made for made in clock if made >= 102)
                result["admitted"] = _generate(server, [(20, 20, 1)] * 2, seed=7)
                result["generated"] = sorted([*decoding.result(), max(clock, default=102)])
        result.update(session=s, warnings=[str(w.message) for w in caught], before=idle)

    try:
        server.retry_on_kineto_crash(run)
    finally:
        assert server.post("/slow_down", {"forward_sleep_time": 0})[0] == 200  # 0: SGLang's "no sleep"
    record = _record(path, result["before"])
    assert [ct for ct, *_ in record] == list(range(result["before"] + 1, result["before"] + 1 + len(record)))
    (start,) = _session_starts(path, result["before"])
    result.update(record=record, first=start - result["before"] - 1)
    result["mode"] = "mixed-chunk" if "--enable-mixed-chunk" in server.extra_args else "stock-chunking"
    assert (result["generated"], result["admitted"]) == ([200] * 3, [20] * 2)
    _check(result, window)
    # The scenario does what it says: the requests had tokens before the session started, the
    # window opened some steps in, and the later requests were admitted while it was open.
    produced = produced_by_step([counts for _, _, counts, _ in record])
    first, recorded = result["first"], result["recorded"]
    decoded_before = max(k for indices in produced[:first] for k in indices) + 1
    assert 0 < decoded_before < 100, decoded_before
    admitted = [step for step, indices in enumerate(produced[first:]) if 0 in indices]
    assert 0 < recorded.start < admitted[0] < recorded.stop, (recorded, admitted)
    print(
        f"window {window}: session started at token {decoded_before}, recorded {recorded.start}:{recorded.stop}, admitted at {admitted}"
    )


def test_a_request_that_stops_on_a_stop_token_is_counted_once_more(recorded_server: Server, tmp_path: Path) -> None:
    """docs/window.md, "Tokens an engine computes and discards": under SGLang's overlap scheduler
    a request that stopped on a stop token is in the batch after it too, where SGLang computes one
    more token for it and drops it; profwin counts that token. Four greedy requests are run once
    to learn the tokens of the first: a token it produces for the first time at some index k >= 10
    becomes its stop token, and the window is ``k-5:k+5``. Run again with that stop token, the
    request ends at token k, and the batch after holds its dropped token k+1: the steps recorded
    and every annotation are what SGLang's record says it computed (:func:`_computed`)."""
    server = recorded_server
    texts, params = _prompts([(30, 40, 1)] * 4, seed=11)
    for p in params:
        p["ignore_eos"] = False
    first = _results(server, texts, params)[0]["output_ids"]
    if len(first) < 40:  # it ended on the model's own EOS: that is the stop token
        k = len(first) - 1
    else:
        k = next(i for i in range(10, len(first)) if first[i] not in first[:i])
        params[0] = {**params[0], "stop_token_ids": [first[k]]}
    assert k >= 10, first
    window = f"{k - 5}:{k + 5}"
    spec = ProfileSpec(window=Window.parse(f"{window} tokens"), output_dir=tmp_path, activities=("cpu",), prefix="stop")
    result = _recorded_session(server, spec, lambda: _results(server, texts, params))
    assert result["generated"][0]["output_ids"] == first[: k + 1]  # the same greedy tokens, ending on the stop token
    _check(result, window)
    record = result["record"]
    kept = produced_by_step([counts for _, _, counts, _ in record])
    computed = _computed(record)
    dropped = [
        (step, sorted((Counter(computed[step]) - Counter(kept[step])).elements()))
        for step in result["recorded"]
        if len(computed[step]) > len(kept[step])
    ]
    assert [indices for _, indices in dropped] == [[k + 1]], (k, dropped)
    print(f"window {window}: the first request stopped at token {k}; its dropped token {k + 1} at step {dropped[0][0]}")


def test_token_window_without_the_plugin_is_the_step_window(recorded_server: Server, tmp_path: Path) -> None:
    """Forced to steps (options.sglang.start: trim), as on a server whose plugin is missing."""
    spec = ProfileSpec(
        window=Window.parse("2:5 tokens"), output_dir=tmp_path, activities=("cpu",), options={"sglang": {"start": "trim"}}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with session(recorded_server.url, spec, api_key=recorded_server.api_key) as s:
            thread = threading.Thread(target=recorded_server.generate, args=(8,))
            thread.start()
            thread.join()
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    assert trace.steps == Window(2, 5)
    assert any("the trace is in steps: window 2:5 tokens is recorded as steps 2:5" in str(w.message) for w in caught)
