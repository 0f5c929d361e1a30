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

import pubsub_go
from emulators import LoadServer
from sparkutil import spark_session, wait_for_full_prefetch

pytestmark = pytest.mark.spark

N = 1500
PER_BATCH = 300
BACK_WITHIN_S = 10.0


def test_a_stopped_querys_prefetch_is_nacked_within_seconds(tmp_path):
    from pubsub_go.client import admin

    server = LoadServer("--messages", str(N), "--payload-bytes", "100")
    spark = spark_session()
    q = None
    try:
        admin("create_topic", emulator_host=server.host_port, topic="projects/q/topics/t")
        admin("create_subscription", emulator_host=server.host_port, topic="projects/q/topics/t",
              subscription="projects/q/subscriptions/s")
        pubsub_go.register(spark)
        df = (spark.readStream.format("pubsub-go").option("subscriptionId", "projects/q/subscriptions/s")
              .option("emulatorHost", server.host_port).option("batchLogLocation", str(tmp_path / "log"))
              .option("numPartitions", "1").option("maxRecordsPerTrigger", str(PER_BATCH))
              .option("maxOutstandingMessages", str(N))  # room to prefetch everything
              .option("ackDeadlineSeconds", "60")
              # Kept two minutes unused: only the stop can close it in time.
              .option("subscriberIdleMs", "120000").load())
        q = (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="3 seconds").start())

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
    finally:
        if q is not None and q.isActive:
            q.stop()
        server.stop()
