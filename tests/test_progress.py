"""The figures a running query reports, and the helper that plots them."""

from __future__ import annotations

import pytest

import pubsub_go
from pubsub_go.progress import figures, plot
from sparkutil import run_until, spark_session

pytestmark = pytest.mark.spark


def test_progress_figures_read_a_known_backlog_down(google, emulator, tmp_path):
    spark = spark_session(master="local[2,4]")
    pubsub_go.register(spark)
    topic, sub = google.topic(ack_deadline=10)
    google.publish(topic, [b"p%d" % i for i in range(2000)])
    df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
          .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "log"))
          .option("maxRecordsPerTrigger", "500").load())
    q = (df.writeStream.format("memory").queryName("progress_figs")
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM progress_figs").first().c >= 2000)
        q.processAllAvailable()
        rows = figures(q)
        import json

        raw = q.lastProgress["sources"][0]["latestOffset"]
        raw = json.loads(raw) if isinstance(raw, str) else raw
    finally:
        q.stop()
    assert rows, "no progress with the source's figures"
    for key in ("pulled", "bytesPulled", "acked", "nacked", "redeliveries", "deadLettered", "decodeErrors",
                "pendingAcks", "buffered", "oldestUnackedAgeMs", "backlogMessages", "backlogNote"):
        assert key in raw, f"{key} missing from the progress: {raw}"
    assert raw["bytesPulled"] > 0 and raw["acked"] > 0, raw
    last = rows[-1]
    # Figures cover the batches finished before the last report was planned.
    assert last["rows"] == sum(r["numInputRows"] for r in rows[:-1]), rows
    assert last["taken"] >= last["rows"] > 0
    assert last["backlogMessages"] is None, "a backlog the service cannot give must not read as 0"
    ages = [r["oldestUnackedAgeMs"] for r in rows if r["oldestUnackedAgeMs"] is not None]
    assert ages and all(a >= 0 for a in ages), rows
    out = plot(q, str(tmp_path / "progress.png"))
    assert (tmp_path / "progress.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", out
