"""Admission control, complete (spark/read/options/admission.py): with both
maxRecordsPerTrigger and maxBytesPerTrigger the stricter bounds every
micro-batch, and minRecordsPerTrigger makes a micro-batch wait for its
rows, no longer than maxTriggerDelay. One Spark session and the session's
official emulator for the module; Google's client publishes."""

from __future__ import annotations

import threading
import time

import pytest

from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.options.source import SourceOptions

BASE = {"subscriptionId": "projects/p/subscriptions/s", "emulatorHost": "127.0.0.1:1",
        "batchLogLocation": "/tmp/pubsub-go-admission-test", "numPartitions": "2"}


@pytest.mark.parametrize("opts,expected", [
    ({"maxTriggerDelay": "5s"}, "maxTriggerDelay only applies with minRecordsPerTrigger"),
    ({"minRecordsPerTrigger": "500", "maxRecordsPerTrigger": "100"}, "exceeds maxRecordsPerTrigger=100"),
    ({"minRecordsPerTrigger": "1000", "maxRecordsPerPartition": "100"}, "exceeds maxRecordsPerPartition=100"),
    ({"minRecordsPerTrigger": "0"}, "minRecordsPerTrigger=0 is out of range"),
    ({"minBytesPerTrigger": "5000", "maxBytesPerTrigger": "1000"}, "exceeds maxBytesPerTrigger=1000"),
])
def test_inconsistent_limits_are_refused(opts, expected, monkeypatch):
    monkeypatch.delenv("PUBSUB_GO_SPARK_MASTER", raising=False)
    with pytest.raises(OptionError, match=expected):
        SourceOptions.parse({**BASE, **opts})


def test_limits_parse_with_kafka_defaults(monkeypatch):
    monkeypatch.delenv("PUBSUB_GO_SPARK_MASTER", raising=False)
    lim = SourceOptions.parse({**BASE, "minRecordsPerTrigger": "10"}).limits
    assert (lim.min_rows, lim.max_delay_ms) == (10, 15 * 60_000)  # Kafka's 15m
    lim = SourceOptions.parse({**BASE, "minRecordsPerTrigger": "10", "maxTriggerDelay": "2 minutes"}).limits
    assert lim.max_delay_ms == 120_000
    lim = SourceOptions.parse({**BASE, "minBytesPerTrigger": "1000", "maxTriggerDelay": "3s"}).limits
    assert (lim.min_bytes, lim.min_rows, lim.max_delay_ms) == (1000, None, 3000)  # None: no minimum


@pytest.fixture(scope="module")
def spark(emulator):
    import pubsub_go
    from sparkutil import spark_session

    s = spark_session(master="local[2]")
    pubsub_go.register(s)
    return s


def _stream(spark, emulator, sub, tmp_path, **opts):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
         .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "log"))
         .option("maxWaitTimeMs", "300"))
    for k, v in opts.items():
        r = r.option(k, str(v))
    return r.load()


def _deadline_and_end_ms(progress: dict) -> tuple[int, int]:
    """A micro-batch's maxTriggerDelay deadline (the waitUntilMs its end
    offset carries: when latestOffset planned it, plus the delay) and when
    it ended (its trigger's start plus its duration), both epoch ms on this
    machine's clock. A batch short of its minimum cannot end before its
    deadline (no race: it waits for it). One that got its minimum ends
    before it: its rows arrive ~1 s into the 6 s delay, so the margin is
    the rest of the delay, measured from the batch's own planning rather
    than against a constant."""
    import datetime
    import json

    end = progress["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    started = datetime.datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp() * 1000
    return int(end["waitUntilMs"]), int(started) + progress["durationMs"]["triggerExecution"]


def _batches(spark, df, tmp_path, until, timeout: float = 120, on_batch=None) -> list[dict]:
    """Runs df into a sink that records each micro-batch's rows until
    until(rows so far); returns the non-empty batches' progress. on_batch(rows)
    runs in the sink, as each micro-batch ends."""
    from sparkutil import run_until

    seen: list[int] = []

    def sink(b, _) -> None:
        seen.append(b.count())
        if on_batch is not None:
            on_batch(seen[-1])

    q = (df.writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        run_until(q, lambda: until(sum(seen)), timeout=timeout)
        progress = [p for p in q.recentProgress if p["numInputRows"]]
    finally:
        q.stop()
    return progress


@pytest.mark.spark
@pytest.mark.parametrize("rows_cap,bytes_cap,stricter", [(400, 60_000, "bytes"), (50, 10_000_000, "rows")])
def test_the_stricter_of_two_trigger_limits_wins(spark, google, emulator, tmp_path, rows_cap, bytes_cap, stricter):
    """1 KB messages: 60 KB is the stricter cap against 400 rows (about 55
    rows of ~1.1 KB with their metadata), 50 rows against 10 MB. Before
    both applied, the rows cap silently won."""
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"%04d" % i + b"x" * 1020 for i in range(600)])
    df = _stream(spark, emulator, sub, tmp_path, numPartitions=2, batchSize=20,
                 maxRecordsPerTrigger=rows_cap, maxBytesPerTrigger=bytes_cap)
    progress = _batches(spark, df, tmp_path, lambda n: n >= 600)
    rows = [p["numInputRows"] for p in progress]
    assert sum(rows) == 600, rows
    if stricter == "rows":
        assert max(rows) <= 50, rows
    else:
        # Each of 2 tasks stops once its 30 KB share is reached: at most a
        # pull (20 rows, sized down to what the share leaves) past it.
        assert max(rows) <= 2 * (30_000 // 1_000 + 20), rows
        assert len(rows) >= 600 // 100, rows


@pytest.mark.spark
def test_min_records_waits_no_longer_than_max_trigger_delay(spark, google, emulator, tmp_path):
    """minRecordsPerTrigger=100 with 30 messages available: the micro-batch
    waits the 6 s maxTriggerDelay, then takes the 30. Then 150 arrive while
    the next micro-batch waits: it takes them without waiting out the delay."""
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"a%d" % i for i in range(30)])
    # subscriberIdleMs=0: each task's subscriber closes with it, so the next
    # batch's task (maybe in the other worker) is the only one receiving;
    # a pooled idle subscriber in the other worker would hold its share of
    # the 150 until it expires (docs/source.md, Admission control).
    df = _stream(spark, emulator, sub, tmp_path, numPartitions=1, minRecordsPerTrigger=100,
                 maxTriggerDelay="6s", subscriberIdleMs=0)

    def publish_later() -> None:
        time.sleep(1)  # the next micro-batch is waiting by then
        google.publish(topic, [b"b%d" % i for i in range(150)])

    def on_batch(n: int) -> None:
        if n and not later.is_alive() and not started:
            started.append(1)
            later.start()

    later, started = threading.Thread(target=publish_later, daemon=True), []
    progress = _batches(spark, df, tmp_path, lambda n: n >= 180, on_batch=on_batch)
    later.join(60)
    rows = [p["numInputRows"] for p in progress]
    took = [p["durationMs"]["triggerExecution"] for p in progress]
    (deadline0, end0), (deadline1, end1) = _deadline_and_end_ms(progress[0]), _deadline_and_end_ms(progress[1])
    # Waited the delay, then took the 30 (had it waited for 100, it would never
    # have ended: the 150 are published only after it ends).
    assert rows[0] == 30 and end0 >= deadline0, (rows, took, end0 - deadline0)
    assert rows[1] >= 100, (rows, took)  # the next batch had its minimum...
    assert end1 < deadline1, (rows, took, end1 - deadline1)  # ...before the delay ran out
    assert sum(rows) == 180, rows


@pytest.mark.spark
def test_min_bytes_waits_no_longer_than_max_trigger_delay(spark, google, emulator, tmp_path):
    """minBytesPerTrigger=100 KB with about 22 KB available: the micro-batch
    waits the 4 s maxTriggerDelay, then takes what there is."""
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"%04d" % i + b"x" * 1020 for i in range(20)])
    df = _stream(spark, emulator, sub, tmp_path, numPartitions=1, minBytesPerTrigger=100_000,
                 maxTriggerDelay="4s", subscriberIdleMs=0)
    progress = _batches(spark, df, tmp_path, lambda n: n >= 20)
    rows = [p["numInputRows"] for p in progress]
    took = [p["durationMs"]["triggerExecution"] for p in progress]
    deadline, end = _deadline_and_end_ms(progress[0])
    # Waited the delay (it never gets its 100 KB), then took what there was.
    assert rows == [20] and end >= deadline, (rows, took, end - deadline)
