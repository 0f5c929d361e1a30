"""Subscription lifecycle (topicId creates, deleteSubscriptionOnStreamStop
deletes) and start position (startingTimestamp / startingSnapshot, applied
with Seek on the first start only), against Google's official emulator."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone

import pytest
from google.api_core.exceptions import NotFound

import pubsub_go
from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.options.source import SourceOptions
from sparkutil import run_until, spark_session

pytestmark = pytest.mark.spark
PROJECT = "pubsub-go-test"


@pytest.fixture()
def spark():
    s = spark_session(master="local[2,4]")
    pubsub_go.register(s)
    return s


def new_topic(google) -> str:
    topic = f"projects/{PROJECT}/topics/lt-{uuid.uuid4().hex[:10]}"
    google.publisher.create_topic(name=topic, timeout=30)
    return topic


def reader(spark, emulator, sub, tmp_path, **opts):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
         .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "batchlog"))
         .option("numPartitions", "1").option("maxWaitTimeMs", "300"))
    for k, v in opts.items():
        r = r.option(k, str(v))
    return r.load()


def get_sub(google, sub):
    try:
        return google.subscriber.get_subscription(subscription=sub, timeout=10)
    except NotFound:
        return None


def wait_for(pred, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.3)
    raise AssertionError("condition not reached")


def test_topic_id_creates_the_subscription_with_its_settings_and_deletes_it_on_stop(spark, google, emulator,
                                                                                      tmp_path):
    topic, dlq = new_topic(google), new_topic(google)
    sub = f"projects/{PROJECT}/subscriptions/created-{uuid.uuid4().hex[:10]}"
    assert get_sub(google, sub) is None
    df = reader(spark, emulator, sub, tmp_path, topicId=topic, ackDeadlineSeconds=42,
                messageRetentionSeconds=3600, enableExactlyOnceDelivery="true", filter='attributes.k = "v"',
                subscriptionDeadLetterTopicId=dlq, maxDeliveryAttempts=7, deleteSubscriptionOnStreamStop="true")
    q = (df.writeStream.format("memory").queryName("created")
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        wait_for(lambda: get_sub(google, sub) is not None)
        s = get_sub(google, sub)
        assert s.topic == topic and s.ack_deadline_seconds == 42 and s.enable_exactly_once_delivery
        assert s.filter == 'attributes.k = "v"'
        assert s.message_retention_duration.total_seconds() == 3600
        assert s.dead_letter_policy.dead_letter_topic == dlq and s.dead_letter_policy.max_delivery_attempts == 7
        google.publish(topic, [b"x%d" % i for i in range(20)], attributes=[{"k": "v"}] * 20)
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM created").first().c >= 20)
    finally:
        q.stop()
    wait_for(lambda: get_sub(google, sub) is None, 30)  # deleteSubscriptionOnStreamStop
    assert google.publisher.get_topic(topic=topic, timeout=10).name == topic  # the topic is never touched


def test_existing_subscription_is_used_as_is_and_kept(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=10)
    google.publish(topic, [b"e%d" % i for i in range(10)])
    df = reader(spark, emulator, sub, tmp_path, topicId=topic, ackDeadlineSeconds=99)
    q = (df.writeStream.format("memory").queryName("existing")
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM existing").first().c >= 10)
    finally:
        q.stop()
    s = get_sub(google, sub)
    assert s is not None and s.ack_deadline_seconds == 10  # neither changed nor deleted


def test_subscription_on_another_topic_is_refused(spark, google, emulator, tmp_path):
    _, sub = google.topic()
    other = new_topic(google)
    df = reader(spark, emulator, sub, tmp_path, topicId=other)
    q = df.writeStream.format("memory").queryName("othertopic").option(
        "checkpointLocation", str(tmp_path / "ckpt")).start()
    try:
        with pytest.raises(Exception) as e:
            q.awaitTermination(90)
        assert "exists on topic" in str(e.value) and other in str(e.value)
    finally:
        q.stop()


def test_no_topic_id_never_creates(spark, emulator, google, tmp_path):
    sub = f"projects/{PROJECT}/subscriptions/missing-{uuid.uuid4().hex[:10]}"
    df = reader(spark, emulator, sub, tmp_path)
    q = df.writeStream.format("memory").queryName("nocreate").option(
        "checkpointLocation", str(tmp_path / "ckpt")).start()
    try:
        wait_for(lambda: q.exception() is not None, 90)
        assert "NOT_FOUND" in str(q.exception())
    finally:
        q.stop()
    assert get_sub(google, sub) is None


def _file_query(spark, emulator, sub, tmp_path, **opts):
    df = reader(spark, emulator, sub, tmp_path, **opts)
    return (df.selectExpr("CAST(payload AS STRING) AS p").writeStream.format("parquet")
            .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ckpt")).start())


def _payloads(spark, tmp_path) -> list[str]:
    out = tmp_path / "out"
    if not out.exists() or not any(out.glob("*.parquet")):
        return []
    return [r.p for r in spark.read.parquet(str(out)).collect()]


def test_starting_timestamp_seeks_on_the_first_start_and_never_on_restart(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    google.subscriber.update_subscription(request={"subscription": {"name": sub, "retain_acked_messages": True},
                                                   "update_mask": {"paths": ["retain_acked_messages"]}}, timeout=10)
    start_ms = int(datetime.now(timezone.utc).timestamp() * 1000) - 2000
    google.publish(topic, [b"a%d" % i for i in range(10)])
    assert len(google.pull_all(sub, max_wait=3)) == 10  # consumed (acked) before the query exists

    q = _file_query(spark, emulator, sub, tmp_path, startingTimestamp=start_ms)
    try:
        run_until(q, lambda: len(_payloads(spark, tmp_path)) >= 10)
    finally:
        q.stop()
    assert sorted(_payloads(spark, tmp_path)) == sorted(f"a{i}" for i in range(10))  # the seek brought them back

    google.publish(topic, [b"b%d" % i for i in range(5)])
    q = _file_query(spark, emulator, sub, tmp_path, startingTimestamp=start_ms)  # same checkpoint
    try:
        run_until(q, lambda: len(_payloads(spark, tmp_path)) >= 15)
        time.sleep(3)
        q.processAllAvailable()
    finally:
        q.stop()
    got = _payloads(spark, tmp_path)
    # A second seek would have brought the a's back (they are retained).
    assert sorted(got) == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(5)]), got


def test_starting_snapshot(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"s%d" % i for i in range(8)])
    snap = f"projects/{PROJECT}/snapshots/snap-{uuid.uuid4().hex[:8]}"
    google.subscriber.create_snapshot(request={"name": snap, "subscription": sub}, timeout=10)
    assert len(google.pull_all(sub, max_wait=3)) == 8  # consumed after the snapshot
    df = reader(spark, emulator, sub, tmp_path, startingSnapshot=snap.rsplit("/", 1)[1], projectId=PROJECT)
    q = (df.writeStream.format("memory").queryName("snap")
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM snap").first().c >= 8)
    finally:
        q.stop()
    rows = spark.sql("SELECT CAST(payload AS STRING) p FROM snap").collect()
    assert sorted(r.p for r in rows) == sorted(f"s{i}" for i in range(8))


@pytest.mark.parametrize("value, expected_ms", [
    ("1735689600000", 1735689600000),
    ("2025-01-01T00:00:00Z", 1735689600000),
    ("2025-01-01T01:00:00+01:00", 1735689600000),
    ("2025-01-01 00:00:00", 1735689600000),
])
def test_starting_timestamp_forms(value, expected_ms):
    o = SourceOptions.parse({"subscriptionId": "projects/p/subscriptions/s", "startingTimestamp": value})
    assert o.start.timestamp_ms == expected_ms


def test_relative_starting_timestamp_and_bad_values():
    parse = SourceOptions.parse
    base = {"subscriptionId": "projects/p/subscriptions/s"}
    assert parse({**base, "startingTimestamp": "-2 hours"}).start.relative_ms == 7_200_000
    assert parse({**base, "startingTimestamp": "-30m"}).start.relative_ms == 1_800_000
    assert parse({**base, "startingSnapshot": "sn"}).start.snapshot == "projects/p/snapshots/sn"
    for opts, expected in [
        ({"startingTimestamp": "yesterday"}, "is not understood"),
        ({"startingTimestamp": "-3 fortnights"}, "unknown unit"),
        ({"startingTimestamp": "1", "startingSnapshot": "s"}, "exclusive"),
        ({"filter": "x"}, "set topicId too"),
        ({"topicId": "t", "maxDeliveryAttempts": "7"}, "needs subscriptionDeadLetterTopicId"),
        ({"topicId": "t", "messageRetentionSeconds": "60"}, "10 minutes to 31 days"),
    ]:
        with pytest.raises(OptionError) as e:
            parse({**base, **opts})
        assert expected in str(e.value), (opts, str(e.value))
