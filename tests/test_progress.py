"""The figures a running query reports, and the helper that plots them."""

from __future__ import annotations

import time

import pytest

import pubsub_go
from pubsub_go.progress import figures, plot
from sparkutil import run_until, spark_session

pytestmark = pytest.mark.spark


def test_progress_figures_read_a_known_backlog_down(google, emulator, tmp_path):
    spark = spark_session(master="local[2,4]")
    pubsub_go.register(spark)
    topic, sub = google.topic(ack_deadline=10)
    payloads = [b"p%d" % i for i in range(2000)]
    published_after = time.time()
    google.publish(topic, payloads)
    df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
          .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "log"))
          .option("maxRecordsPerTrigger", "500").load())
    q = (df.writeStream.format("memory").queryName("progress_figs")
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM progress_figs").first().c >= 2000)
        q.processAllAvailable()
        in_sink = spark.sql("SELECT count(*) c, count(DISTINCT message_id) d FROM progress_figs").first()
        rows = figures(q)
        reported_before = time.time()
        import json

        raw = q.lastProgress["sources"][0]["latestOffset"]
        raw = json.loads(raw) if isinstance(raw, str) else raw
    finally:
        q.stop()
    assert (in_sink.c, in_sink.d) == (2000, 2000), in_sink
    assert rows, "no progress with the source's figures"
    for key in ("pulled", "bytesPulled", "acked", "nacked", "redeliveries", "deadLettered", "decodeErrors",
                "pendingAcks", "buffered", "oldestUnackedAgeMs", "backlogMessages", "backlogNote"):
        assert key in raw, f"{key} missing from the progress: {raw}"
    # Each figure against what the test knows: 2,000 messages of known
    # payloads, all read once into the sink, none undecodable, none late.
    # Figures cover the batches finished before the last report was planned,
    # which after processAllAvailable are all that had rows.
    last = rows[-1]
    assert last["rows"] == sum(r["numInputRows"] for r in rows[:-1]) == raw["rows"] == 2000, rows
    assert raw["deadLettered"] == raw["decodeErrors"] == raw["late"] == raw["ackFailures"] == 0, raw
    # taken = rows + dead-lettered + duplicates (a redelivery of a recorded message, dropped and acked)
    assert raw["taken"] == raw["rows"] + raw["duplicates"], raw
    # Every message's first arrival at the subscriber that handed it out is
    # counted, and a copy the same subscriber receives again is a redelivery.
    assert raw["pulled"] - raw["redeliveries"] >= 2000, raw
    # Nacked (never handed out) and buffered (at the last task's end) ones were pulled and not taken.
    assert raw["pulled"] >= raw["taken"] + raw["nacked"], raw
    assert 0 <= raw["buffered"] <= raw["pulled"] - raw["taken"], raw
    assert raw["bytesPulled"] >= sum(len(p) for p in payloads), raw  # every payload came in at least once
    # Every row's ack id is acked by a commit, or its entry still waits for one (pending).
    assert raw["acked"] <= 2000 <= raw["acked"] + raw["pendingAcks"], raw
    assert last["backlogMessages"] is None, "a backlog the service cannot give must not read as 0"
    # An unacked message's age: published after published_after, reported before reported_before
    # (one clock: the emulator's publish times are this machine's; 1 s for their rounding).
    ages = [r["oldestUnackedAgeMs"] for r in rows if r["oldestUnackedAgeMs"] is not None]
    assert ages and all(0 <= a <= (reported_before - published_after + 1) * 1000 for a in ages), rows
    out = plot(q, str(tmp_path / "progress.png"))
    assert (tmp_path / "progress.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", out
