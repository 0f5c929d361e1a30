"""An executor's Python worker dies (SIGKILL) between micro-batches while
its pooled subscriber (subscriberIdleMs) holds prefetched messages: every
one of them is delivered again within 15 s, and the file sink's output is
exactly once.

The server is bench/loadserver, not Google's emulator nor the embedded one
(go/internal/emulator, Go's pstest):
- Google's emulator keeps a killed stream alive on its side and its
  messages leased forever (docs/source.md, "End of backlog"), so nothing
  would ever come back;
- pstest does expire the deadlines of a dead stream's messages, but ignores
  StreamingPull flow control and pushes every message into the first
  stream, so "prefetch up to the flow control" cannot be set up with it;
- loadserver behaves like Pub/Sub in both (per-stream flow control; the
  deliveries of a closed stream expire at their ack deadline and are
  redelivered with delivery_attempt + 1), and its /stats counts what is
  outstanding, expired and redelivered, which is what this test measures.

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


def test_killed_workers_prefetch_comes_back_within_seconds_and_output_is_exactly_once(tmp_path):
    server = LoadServer("--messages", str(N), "--payload-bytes", "100")
    port = int(server.host_port.rsplit(":", 1)[1])
    stop_spark()  # task retries (local[2,4]) are a SparkContext setting
    spark = spark_session(master="local[2,4]", app="executor-kill")
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
            return worker[0] is not None and st["outstanding"] == N - st["acks"]

        done_rows, st = wait_for_full_prefetch(q, server, N, held)
        pid = worker[0]
        prefetched = N - done_rows
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        assert prefetched >= PER_BATCH, st

        # Every prefetched message expires on the server and is delivered
        # again (to the worker Spark starts for the next task).
        while server.stats()["redelivered"] - st["redelivered"] < prefetched:
            assert time.monotonic() - killed_at < BACK_WITHIN_S, (
                f"only {server.stats()['redelivered'] - st['redelivered']} of {prefetched} prefetched messages "
                f"delivered again {BACK_WITHIN_S:.0f}s after the worker died; {server.stats()}")
            time.sleep(0.1)
        back_s = time.monotonic() - killed_at

        deadline = time.monotonic() + 180
        while server.stats()["acks"] < N:
            assert time.monotonic() < deadline, f"not every message was committed; {server.stats()}"
            if q.exception():
                raise q.exception()
            time.sleep(0.5)
        q.stop()
        rows = spark.read.parquet(str(out)).collect()
    finally:
        if q is not None and q.isActive:
            q.stop()
        spark.stop()
        server.stop()

    ids = [r.message_id for r in rows]
    assert len(ids) == N and set(ids) == {str(i) for i in range(1, N + 1)}, (
        f"{len(ids)} rows, {len(set(ids))} distinct, want each of {N} once")
    again = sum(1 for r in rows if r.delivery_attempt >= 2)
    assert again >= prefetched, f"{again} rows were redeliveries, want the {prefetched} prefetched ones"
    print(f"prefetched={prefetched} back_within={back_s:.1f}s redelivered_rows={again}")
