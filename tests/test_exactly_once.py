"""Exactly-once delivery subscriptions in a Spark query: acks the service
refuses for good are reported, never counted as acked. The refusals come
from bench/loadserver (--ack-reject-rate), which answers like Pub/Sub does
(Google's emulator accepts such subscriptions but never refuses an ack)."""

from __future__ import annotations

import json

import pytest

import pubsub_go
from emulators import LoadServer
from sparkutil import run_until, spark_session

pytestmark = pytest.mark.spark


def test_refused_acks_are_reported_and_never_counted_as_acked(tmp_path):
    from pubsub_go.client import admin

    server = LoadServer("--ack-reject-rate", "1", "--messages", "200")
    try:
        admin("create_topic", emulator_host=server.host_port, topic="projects/m/topics/t")
        admin("create_subscription", emulator_host=server.host_port, topic="projects/m/topics/t",
              subscription="projects/m/subscriptions/s")
        spark = spark_session(master="local[2]")
        pubsub_go.register(spark)
        df = (spark.readStream.format("pubsub-go").option("subscriptionId", "projects/m/subscriptions/s")
              .option("emulatorHost", server.host_port).option("batchLogLocation", str(tmp_path / "log"))
              .option("numPartitions", "1").option("maxWaitTimeMs", "300").load())
        q = (df.writeStream.format("memory").queryName("eod")
             .option("checkpointLocation", str(tmp_path / "ckpt")).start())

        def latest() -> dict:
            p = q.lastProgress
            off = p["sources"][0]["latestOffset"] if p else None
            return (json.loads(off) if isinstance(off, str) else off) or {}

        try:
            run_until(q, lambda: latest().get("ackRejected", 0) >= 200, timeout=180)
            assert latest()["acked"] == 0, latest()
        finally:
            q.stop()
        assert server.stats()["acks"] == 0
    finally:
        server.stop()
