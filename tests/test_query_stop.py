"""A stopped query's kept subscribers close at once: what they prefetched
goes back to the server within seconds (nacked), not after
subscriberIdleMs. The driver's stop marks the query stopped in the batch
log; the executors' pool reads the mark (subscriber_pool.py).

The server is bench/loadserver, whose /stats counts nacks (Google's
emulator counts nothing a test can read; see test_executor_kill.py for why
pstest cannot hold a prefetch)."""

from __future__ import annotations

import time

import pytest

from emulators import LoadServer
from sparkutil import prefetching_stream, spark_session, wait_for_full_prefetch

pytestmark = pytest.mark.spark

N = 1500
PER_BATCH = 300
BACK_WITHIN_S = 10.0


def test_a_stopped_querys_prefetch_is_nacked_within_seconds_and_a_restart_clears_the_mark(tmp_path):
    server = LoadServer("--messages", str(N), "--payload-bytes", "100")
    spark = spark_session()
    log_dir, ckpt = tmp_path / "log", str(tmp_path / "ckpt")
    q = None
    try:
        # Kept two minutes unused: only the stop can close it in time.
        df = prefetching_stream(spark, server, str(log_dir), "q", N, PER_BATCH)
        q = df.writeStream.format("noop").option("checkpointLocation", ckpt).trigger(processingTime="3 seconds").start()

        done_rows, st = wait_for_full_prefetch(q, server, N, timeout=120)
        prefetched = N - done_rows
        q.stop()
        stopped_at = time.monotonic()

        while server.stats()["nacks"] - st["nacks"] < prefetched:
            assert time.monotonic() - stopped_at < BACK_WITHIN_S, (
                f"{server.stats()['nacks'] - st['nacks']} of {prefetched} prefetched messages nacked "
                f"{BACK_WITHIN_S:.0f}s after the query stopped (kept for subscriberIdleMs=120000?); {server.stats()}")
            time.sleep(0.1)
        print(f"prefetched={prefetched} nacked_within={time.monotonic() - stopped_at:.1f}s")
        marks = list(log_dir.glob("*/_stopped"))
        assert len(marks) == 1, f"the stop left no mark in the batch log: {list(log_dir.rglob('*'))[:20]}"

        # The same query restarted on its checkpoint: its first batch
        # removes the old mark, and it reads on.
        q = df.writeStream.format("noop").option("checkpointLocation", ckpt).trigger(processingTime="3 seconds").start()
        deadline = time.monotonic() + 120
        while not any(p["numInputRows"] > 0 for p in q.recentProgress):
            assert time.monotonic() < deadline, f"the restarted query read nothing; {server.stats()}"
            if q.exception():
                raise q.exception()
            time.sleep(0.2)
        assert not marks[0].exists(), "the restarted query left the earlier run's stop mark"
    finally:
        if q is not None and q.isActive:
            q.stop()
        server.stop()
