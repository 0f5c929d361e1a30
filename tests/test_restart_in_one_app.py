"""A streaming query stopped and started again in the same Spark
application reads everything that arrives, exactly once (issue 36).

Spark keeps its Python workers between queries of one application, and with
them what the source keeps in a worker between tasks (pooled subscribers).
Whatever a stopped run leaves there must not keep the next run, of the same
query or another, from receiving. Against Google's official emulator, with
default options (and with subscriberIdleMs=0, no subscriber kept)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import pubsub_go
from sparkutil import spark_session

pytestmark = pytest.mark.spark

PER_ROUND = 1000  # messages published per query per round
RESTART_BOUND_S = 60.0  # the bound: every message in the sink this long after the restart reads
SETTLE_S = 12.0  # after the last stop, before its cuts are counted (see where it is used)
STARTUP_BOUND_S = 300.0  # for Spark to run every query's first micro-batch (see _wait_for)


def _start(spark, emulator, sub: str, base: Path, idle_ms: str | None):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
         .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(base / "batchlog")))
    if idle_ms is not None:
        r = r.option("subscriberIdleMs", idle_ms)
    return (r.load().selectExpr("message_id", "CAST(payload AS STRING) AS payload").writeStream
            .format("parquet").option("path", str(base / "out"))
            .option("checkpointLocation", str(base / "ckpt")).trigger(processingTime="1 second").start())


def _published_ids(base: Path) -> tuple[int, int]:
    """(rows, distinct payloads) in the files the parquet sink committed
    (its _spark_metadata log names them), read with pyarrow: polling through
    Spark would start two jobs a second beside the queries under test."""
    import json

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    meta = base / "out" / "_spark_metadata"
    if not meta.exists():
        return 0, 0
    files: set[str] = set()
    for log in meta.iterdir():
        if log.name.startswith("."):
            continue
        for line in log.read_text().splitlines()[1:]:  # the first line is the log's version
            entry = json.loads(line)
            if entry.get("action") == "add":
                files.add(entry["path"].removeprefix("file://"))
            elif entry.get("action") == "delete":
                files.discard(entry["path"].removeprefix("file://"))
    payloads = [pq.read_table(f, columns=["payload"]).column("payload") for f in sorted(files)]
    if not payloads:
        return 0, 0
    column = pa.chunked_array([chunk for p in payloads for chunk in p.chunks], type=pa.string())
    return len(column), len(pc.unique(column))


def _publish(google, topic: str, tag: str, n: int) -> None:
    google.publish(topic, [f"{tag}-{i}".encode() for i in range(n)])


def _cut_streams(emulator) -> int:
    """Calls Google's emulator failed to let go since it started
    (OfficialEmulator.cut_call_times says how they show). The emulator is
    shared by the whole session, so callers count from their own start."""
    return len(emulator.cut_call_times())


# Spark waits a fixed 10 s for a Python worker it starts to connect back
# (PythonWorkerFactory, not a setting); on a machine at load average 20+
# that start took longer and failed the query, whatever the source did,
# and more often than ten times in one test run. Each restart is on the
# query's checkpoint, so the exactly-once check stays whole.
SPARK_WORKER_START_FAILED = "Python worker failed to connect back"
WORKER_START_RETRIES = 30  # such failures a test run restarts its query after (on its checkpoint), in all


def _wait_for(emulator, queries, bases, want: int, bound: float, cut_before: int,
              restart=None) -> dict[str, tuple[int, int]]:
    """Waits until every sink holds want distinct payloads (more rows than
    that fail the caller's exactly-once check), at most bound seconds from
    when every query has reported its first micro-batch: Spark starting
    the queries (their Python workers, the first batch's planning) is not
    the connector reading, and on a loaded machine took over a minute by
    itself (at load average 19 a first run's queries had reported no
    micro-batch after 60 s). That start may take STARTUP_BOUND_S."""
    started = time.monotonic()
    deadline = None  # bound after every query's first progress
    while True:
        got = {name: _published_ids(base) for name, base in bases.items()}
        if all(d >= want for _, d in got.values()):
            return got
        for i, q in enumerate(queries):
            if q.exception():
                if restart is None or SPARK_WORKER_START_FAILED not in str(q.exception()):
                    raise q.exception()
                queries[i] = restart(i, q)  # a Spark failure, not the source's: the same query again
                deadline = None  # counted again from the new query's first micro-batch
        now = time.monotonic()
        if deadline is None and all(q.lastProgress for q in queries):
            deadline = now + bound
        if (deadline is not None and now > deadline) or (deadline is None and now > started + STARTUP_BOUND_S):
            progress = {q.name or q.id: (q.lastProgress or {}).get("sources") for q in queries}
            cut = _cut_streams(emulator) - cut_before
            what = (f"{bound:.0f}s after every query's first micro-batch" if deadline is not None
                    else f"{STARTUP_BOUND_S:.0f}s without a micro-batch of every query")
            raise AssertionError(f"{what} the sinks hold (rows, distinct) {got}, want {want} each; "
                                 f"streams cut without a half-close since the test started: {cut}; "
                                 f"last progress: {progress}")
        time.sleep(1)


# On PySpark 4.0 too (scripts/compat.sh runs what is marked compat, compat_oldest on the oldest series):
# the variant with both subscriberIdleMs settings and five restarts.
@pytest.mark.parametrize("idle", [("default", "default", 3),
                                  pytest.param(("default", "0", 5),
                                               marks=[pytest.mark.compat, pytest.mark.compat_oldest])],
                         ids=["two-kept", "kept-and-unpooled-5-restarts"])
def test_two_queries_stopped_and_restarted_in_one_application_read_everything_once(
        google, emulator, tmp_path, idle):
    """Two queries at once on two subscriptions, each started `rounds` times
    on its checkpoint in one application: while each run reads, more
    messages are published; between runs, more again. After every start,
    within RESTART_BOUND_S, each parquet sink holds every message published
    so far exactly once. No StreamingPull stream is cut without a
    half-close at any point, the stops included: Google's emulator would
    go on leasing messages to it, and a later run could pass only because
    those leases happened to lapse within RESTART_BOUND_S. subscriberIdleMs differs per query where the id
    says so ("default" leaves the option unset; "0" keeps no subscriber)."""
    *idle_ms, rounds = idle
    spark = spark_session(master="local[2]")
    pubsub_go.register(spark)
    names = ["a", "b"]
    topics, bases = {}, {}
    for name in names:
        topics[name] = google.topic(ack_deadline=10)
        bases[name] = tmp_path / name
    settings = {n: (None if v == "default" else v) for n, v in zip(names, idle_ms, strict=True)}
    running: list = []
    want = 0
    cut_before = _cut_streams(emulator)
    retried: list[str] = []

    def restart(i: int, failed):
        """Starts the query whose worker Spark failed to start again, on its
        checkpoint (as the test's own restarts do), a few times per test."""
        retried.append(str(failed.exception())[:200])
        assert len(retried) <= WORKER_START_RETRIES, f"Spark failed to start Python workers: {retried}"
        print(f"restarting query {names[i]} after: {retried[-1]}", flush=True)
        return _start(spark, emulator, topics[names[i]][1], bases[names[i]], settings[names[i]])
    cuts: list[tuple[str, str, int]] = []  # (phase, its end's wall-clock time, streams cut in it), for the failure

    def phase(name: str) -> None:
        cuts.append((name, time.strftime("%H:%M:%S"), _cut_streams(emulator) - cut_before - sum(c[2] for c in cuts)))

    try:
        for rnd in range(rounds):
            running = [_start(spark, emulator, topics[n][1], bases[n], settings[n]) for n in names]
            started = time.monotonic()
            # Published while the queries run ...
            threads = [threading.Thread(target=_publish, args=(google, topics[n][0], f"r{rnd}", PER_ROUND))
                       for n in names]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            want += PER_ROUND
            got = _wait_for(emulator, running, bases, want, RESTART_BOUND_S, cut_before, restart)
            print(f"run {rnd}: {got} {time.monotonic() - started:.1f}s after its start", flush=True)
            for (name, (rows, distinct)) in got.items():
                assert rows == distinct == want, (rnd, name, rows, distinct)
            phase(f"run {rnd}")
            for q in running:
                q.stop()
            running = []
            # ... and while they are stopped: the next run must read them.
            for n in names:
                _publish(google, topics[n][0], f"s{rnd}", PER_ROUND)
            want += PER_ROUND
            phase(f"stop {rnd}")
        running = [_start(spark, emulator, topics[n][1], bases[n], settings[n]) for n in names]
        started = time.monotonic()
        got = _wait_for(emulator, running, bases, want, RESTART_BOUND_S, cut_before, restart)
        print(f"last run: {got} {time.monotonic() - started:.1f}s after its start", flush=True)
        for name, (rows, distinct) in got.items():
            assert rows == distinct == want, (name, rows, distinct)
        phase("last run")
        for q in running:
            q.stop()
        running = []
        # The last stop is counted too: a stopped query's tasks end and
        # close their subscribers, the pool's reaper closes what the workers
        # keep within REAP_PERIOD_S (0.5 s), a worker Spark lets go closes
        # all it holds within worker_exit's bound, and a close cancels a
        # stream the server has not ended after its 10 s drain bound
        # (go/internal/subscriber/config.go): a cut is in the log within
        # ~11 s of q.stop(). Waiting longer costs time, never a false failure.
        time.sleep(SETTLE_S)
        phase("last stop")
    finally:
        for q in running:
            q.stop()
    cut = sum(c[2] for c in cuts)
    print(f"calls cut without a half-close, by phase (name, ended at, cuts): {cuts}", flush=True)
    assert not cut, (f"Google's emulator logged {cut} calls cut without a half-close (a StreamingPull stream so "
                     f"cut is leased to for good): by phase (name, ended at, cuts) {cuts}; "
                     f"the log's times of the cuts: {emulator.cut_call_times()[cut_before:]}")
