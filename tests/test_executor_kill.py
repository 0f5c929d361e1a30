"""An executor's Python worker dies (SIGKILL) between micro-batches while
its pooled subscriber (subscriberIdleMs) holds prefetched messages: every
one of them is back at the server within 15 s, delivered again to a later
task, and the file sink's output is exactly once.

The first test's server is bench/loadserver, whose /stats count what is
outstanding, expired and redelivered, which is what it measures; the
second runs the same kill on the embedded emulator (go/internal/emulator),
which like the service honours per-stream flow control and expires the
deliveries of a stream cut without a half-close. Google's emulator keeps
a killed stream alive on its side and its messages leased forever
(docs/source.md, "End of backlog"), so nothing would ever come back there.

ackDeadlineSeconds is 60, so the test fails unless prefetched messages get
a lease of their own, shorter than the ack deadline of handed-out ones."""

from __future__ import annotations

import os
import signal
import time

import pytest

from emulators import LoadServer
from sparkutil import prefetching_stream, spark_session, stop_spark, wait_for_full_prefetch

pytestmark = pytest.mark.spark

N = 1500
PER_BATCH = 300
BACK_WITHIN_S = 15.0


def _pooled_worker_pid(server_port: int) -> int | None:
    """The Python worker (a child of pyspark.daemon) with a connection to
    the server: the one whose pooled subscriber holds the prefetch. The
    driver side's acker runs in another process (not a daemon child)."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline", "ppid"]):
        try:
            parent = psutil.Process(p.info["ppid"]) if p.info["ppid"] else None
            is_worker = (parent is not None and "pyspark.daemon" in " ".join(parent.cmdline())
                         and "pyspark.daemon" in " ".join(p.info["cmdline"] or []))
            if is_worker and any(c.raddr and c.raddr.port == server_port for c in p.net_connections("tcp")):
                found.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    assert len(found) <= 1, f"several workers are connected to the server: {found}"
    return found[0] if found else None


@pytest.fixture(scope="module")
def spark():
    """One session for both servers: task retries (local[2,4]) are a
    SparkContext setting, so the shared session is stopped first."""
    stop_spark()
    session = spark_session(master="local[2,4]", app="executor-kill")
    try:
        yield session
    finally:
        session.stop()


def test_killed_workers_prefetch_comes_back_within_seconds_and_output_is_exactly_once(spark, tmp_path):
    server = LoadServer("--messages", str(N), "--payload-bytes", "100")
    port = int(server.host_port.rsplit(":", 1)[1])
    q = None
    try:
        df = prefetching_stream(spark, server, str(tmp_path / "log"), "k", N, PER_BATCH)
        out = tmp_path / "out"
        q = (df.selectExpr("message_id", "delivery_attempt").writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="8 seconds").start())

        # Every message outstanding (leased) or acked, and the worker whose
        # pooled subscriber holds the prefetch found.
        worker: list[int | None] = [None]

        def held(st: dict) -> bool:
            worker[0] = _pooled_worker_pid(port)
            return worker[0] is not None and st["outstanding"] == N - LoadServer.settled(st)

        done_rows, st = wait_for_full_prefetch(q, server, N, held)
        pid = worker[0]
        prefetched = N - done_rows
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        assert prefetched >= PER_BATCH, st

        # Every prefetched message expires on the server, so it is there for
        # the next reader (the worker Spark starts for the next task, whose
        # subscriber streams while the task runs: a kept one pauses between
        # tasks, subscriber_pool.PAUSE_AFTER_S); the output below shows each
        # delivered again.
        while server.stats()["expired"] - st["expired"] < prefetched:
            assert time.monotonic() - killed_at < BACK_WITHIN_S, (
                f"only {server.stats()['expired'] - st['expired']} of {prefetched} prefetched messages "
                f"back at the server {BACK_WITHIN_S:.0f}s after the worker died; {server.stats()}")
            time.sleep(0.1)
        back_s = time.monotonic() - killed_at

        deadline = time.monotonic() + 180
        while LoadServer.settled(server.stats()) < N:
            assert time.monotonic() < deadline, f"not every message was committed; {server.stats()}"
            if q.exception():
                raise q.exception()
            time.sleep(0.5)
        q.stop()
        rows = spark.read.parquet(str(out)).collect()
    finally:
        if q is not None and q.isActive:
            q.stop()
        server.stop()

    ids = [r.message_id for r in rows]
    assert len(ids) == N and set(ids) == {str(i) for i in range(1, N + 1)}, (
        f"{len(ids)} rows, {len(set(ids))} distinct, want each of {N} once")
    again = sum(1 for r in rows if r.delivery_attempt >= 2)
    assert again >= prefetched, f"{again} rows were redeliveries, want the {prefetched} prefetched ones"
    print(f"prefetched={prefetched} back_within={back_s:.1f}s redelivered_rows={again}")


def test_killed_workers_prefetch_comes_back_on_the_embedded_emulator(spark, tmp_path):
    """The same kill on the embedded emulator (docs/emulator.md): it honours
    each stream's flow control and expires the leases of a stream cut
    without a half-close, as the service does. It has no /stats, so the
    prefetch is what the query has not read once it is idle with the
    pooled worker connected, and the redeliveries are counted in the
    output (delivery_attempt, set under a dead-letter policy)."""
    import pyarrow as pa

    import pubsub_go
    from pubsub_go.client import Emulator, Publisher, admin

    q = None
    emu = Emulator()
    try:
        host = emu.host_port
        port = int(host.rsplit(":", 1)[1])
        topic, sub, dlq = "projects/ke/topics/t", "projects/ke/subscriptions/s", "projects/ke/topics/dead"
        admin("create_topic", emulator_host=host, topic=topic)
        admin("create_topic", emulator_host=host, topic=dlq)
        admin("create_subscription", emulator_host=host, topic=topic, subscription=sub,
              dead_letter_topic=dlq, max_delivery_attempts=100)
        with Publisher(topic=topic, emulator_host=host) as pub:
            pub.publish(pa.record_batch({"payload": pa.array([b"%099d" % i for i in range(N)])}))
            pub.flush(timeout_ms=60_000)
        pubsub_go.register(spark)
        df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
              .option("batchLogLocation", str(tmp_path / "log")).option("numPartitions", "1")
              .option("maxRecordsPerTrigger", str(PER_BATCH)).option("maxOutstandingMessages", str(N))
              .option("ackDeadlineSeconds", "60").option("subscriberIdleMs", "120000").load())
        out = tmp_path / "out"
        q = (df.selectExpr("message_id", "delivery_attempt").writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="4 seconds").start())

        deadline = time.monotonic() + 180
        while True:
            assert time.monotonic() < deadline, "no idle moment with the pooled worker connected"
            if q.exception():
                raise q.exception()
            before = q.status["isTriggerActive"]
            done_rows = sum(p["numInputRows"] for p in q.recentProgress)
            pid = _pooled_worker_pid(port)
            if pid and 0 < done_rows <= N - PER_BATCH and not before and not q.status["isTriggerActive"]:
                break
            time.sleep(0.05)
        prefetched = N - done_rows
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()

        while sum(p["numInputRows"] for p in q.recentProgress) < N:
            assert time.monotonic() - killed_at < 180, f"not every message was read; {q.recentProgress[-1:]}"
            if q.exception():
                raise q.exception()
            time.sleep(0.2)
        back_s = time.monotonic() - killed_at
        q.stop()
        rows = spark.read.parquet(str(out)).collect()
    finally:
        if q is not None and q.isActive:
            q.stop()
        emu.stop()

    ids = [r.message_id for r in rows]
    assert len(ids) == N and len(set(ids)) == N, f"{len(ids)} rows, {len(set(ids))} distinct, want {N} once each"
    again = sum(1 for r in rows if r.delivery_attempt >= 2)
    assert again >= prefetched, f"{again} rows were redeliveries, want the {prefetched} prefetched ones"
    print(f"embedded: prefetched={prefetched} all read {back_s:.1f}s after the kill, redelivered_rows={again}")
