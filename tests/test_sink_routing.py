"""The sink's `topic` column (rows routed to their topics), its
`timestampAttribute` (event time as epoch millis, Beam's form) and its
`compression`, against Google's official emulator with Google's own Python
client as the reader. One Spark session and one emulator for the module."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType, TimestampType

from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.write.options import SinkOptions, validate_sink_schema

ROUTED = StructType([StructField("payload", BinaryType()), StructField("topic", StringType())])


# -- options and schema (no Spark, no network) ---------------------------------

def test_topic_column_makes_topic_id_optional_and_resolves_short_ids() -> None:
    o = SinkOptions.parse({"projectId": "p", "emulatorHost": "127.0.0.1:1"}, routed=True)
    assert o.topic is None and o.project == "p"
    assert o.route("orders") == "projects/p/topics/orders"
    assert o.route("projects/q/topics/x") == "projects/q/topics/x"
    with pytest.raises(OptionError, match="topic column is null and option topicId is not set"):
        o.route(None)
    with pytest.raises(OptionError, match="'a/b'"):
        o.route("a/b")
    # Beside topicId: a null column takes it, and its project serves short ids.
    o = SinkOptions.parse({"topicId": "projects/p/topics/default", "emulatorHost": "127.0.0.1:1"}, routed=True)
    assert o.route(None) == "projects/p/topics/default" and o.route("t2") == "projects/p/topics/t2"
    # Without a topic column topicId stays required.
    with pytest.raises(OptionError, match="option topicId is required"):
        SinkOptions.parse({"projectId": "p", "emulatorHost": "127.0.0.1:1"})


@pytest.mark.parametrize("options, expected", [
    ({"timestampColumn": "ts"}, "timestampColumn is set but timestampAttribute is not"),
    ({"timestampAttribute": "googts"}, "reserved"),
    ({"timestampAttribute": "x", "idAttribute": "x"}, "both 'x'"),
    ({"compression": "zstd"}, "accepted values are none, gzip"),
    ({"compressionBytesThreshold": "0"}, "compressionBytesThreshold=0 is out of range"),
])
def test_bad_new_options_name_the_option(options: dict[str, str], expected: str) -> None:
    with pytest.raises(OptionError, match=expected):
        SinkOptions.parse({"topicId": "projects/p/topics/t", "emulatorHost": "127.0.0.1:1", **options})


def test_schema_takes_topic_and_timestamp_columns() -> None:
    opts = SinkOptions.parse({"topicId": "projects/p/topics/t", "timestampAttribute": "ts_ms"})
    assert (opts.timestamp_column, opts.compression, opts.compression_bytes_threshold) == ("event_time", "none", 240)
    validate_sink_schema(StructType([*ROUTED.fields, StructField("event_time", TimestampType())]), opts)
    with pytest.raises(OptionError, match="missing column 'event_time'"):
        validate_sink_schema(ROUTED, opts)
    with pytest.raises(OptionError, match="'event_time' \\(timestampColumn\\) has type bigint"):
        validate_sink_schema(StructType([*ROUTED.fields, StructField("event_time", LongType())]), opts)
    with pytest.raises(OptionError, match="column 'topic' has type bigint"):
        validate_sink_schema(StructType([StructField("payload", BinaryType()), StructField("topic", LongType())]))
    # Without the option the column is not one the sink writes.
    with pytest.raises(OptionError, match="unexpected column 'event_time'"):
        validate_sink_schema(StructType([*ROUTED.fields, StructField("event_time", TimestampType())]))


# -- Spark ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def spark() -> Iterator:
    from sparkutil import registered_session

    yield from registered_session(app="pubsub-go-sink-routing", spark__sql__session__timeZone="UTC")


def pull_until(g, sub: str, n: int, timeout: float = 60) -> list:
    """Pulls (and acks) until n messages arrived, then 2 s more for extras."""
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        resp = g.subscriber.pull(request={"subscription": sub, "max_messages": 1000}, timeout=5)
        if resp.received_messages:
            out.extend(resp.received_messages)
            g.subscriber.acknowledge(request={"subscription": sub, "ack_ids": [m.ack_id for m in
                                                                                resp.received_messages]})
    return out + g.pull_all(sub, max_wait=2)


@pytest.mark.spark
@pytest.mark.timeout(240)
def test_rows_routed_by_topic_column_each_once_with_event_time(spark, google) -> None:
    """Three topics named by the topic column (a short id, a full path, and
    null for topicId): every row arrives once, in its topic only, carrying
    its event time as epoch millis, which Google's client reads back."""
    (t0, s0), (t1, s1), (t2, s2) = google.topic(), google.topic(), google.topic()
    n = 3000
    short1 = t1.rsplit("/", 1)[1]
    df = spark.range(n, numPartitions=2).selectExpr(
        "CAST(CAST(id AS STRING) AS BINARY) AS payload",
        f"CASE id % 3 WHEN 0 THEN NULL WHEN 1 THEN '{short1}' ELSE '{t2}' END AS topic",
        # 1.234 s after 2026-01-01T00:00:00Z plus id ms (and some µs, rounded down).
        "timestamp_micros(1767225600000000 + 1234000 + id * 1000 + 999) AS event_time",
    )
    (df.write.format("pubsub-go")
     .option("emulatorHost", google.host_port).option("projectId", google.project).option("topicId", t0)
     .option("timestampAttribute", "ts_ms").option("compression", "gzip").option("compressionBytesThreshold", "1")
     .mode("append").save())

    base_ms = 1767225600000 + 1234
    for rem, sub in ((0, s0), (1, s1), (2, s2)):
        got = pull_until(google, sub, n // 3)
        ids = sorted(int(m.message.data) for m in got)
        assert ids == [i for i in range(n) if i % 3 == rem], f"topic {rem}: {len(ids)} messages"
        for m in got:
            i = int(m.message.data)
            assert m.message.attributes["ts_ms"] == str(base_ms + i)
    # Beam reads this attribute as epoch millis: the same instant.
    assert datetime.fromtimestamp((base_ms + 5) / 1000, tz=timezone.utc) == \
        datetime(2026, 1, 1, 0, 0, 1, 239000, tzinfo=timezone.utc)


@pytest.mark.spark
@pytest.mark.timeout(180)
def test_unknown_topic_in_column_fails_naming_it_and_publishes_nothing_of_the_batch(spark, google) -> None:
    good, sub = google.topic()
    missing = f"projects/{google.project}/topics/missing-{uuid.uuid4().hex[:8]}"
    df = spark.range(100, numPartitions=1).selectExpr(
        "CAST(CAST(id AS STRING) AS BINARY) AS payload",
        f"IF(id = 50, '{missing}', '{good}') AS topic",
    )
    with pytest.raises(Exception) as e:
        (df.write.format("pubsub-go").option("emulatorHost", google.host_port)
         .option("projectId", google.project).mode("append").save())
    assert missing in str(e.value) and "NOT_FOUND" in str(e.value)
    # The one Arrow batch held both topics' rows: none went out.
    assert google.pull_all(sub, max_wait=3) == []


@pytest.mark.spark
@pytest.mark.timeout(180)
def test_stream_routes_by_topic_column(spark, google, tmp_path) -> None:
    (t0, s0), (t1, s1) = google.topic(), google.topic()
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text("".join(f'{{"i": {i}}}\n' for i in range(40)))
    q = (spark.readStream.schema("i LONG").json(str(src))
         .selectExpr("CAST(CAST(i AS STRING) AS BINARY) AS payload",
                     f"IF(i % 2 = 0, '{t0}', '{t1}') AS topic")
         .writeStream.format("pubsub-go").option("emulatorHost", google.host_port)
         .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    for rem, sub in ((0, s0), (1, s1)):
        got = sorted(int(m.message.data) for m in pull_until(google, sub, 20))
        assert got == list(range(rem, 40, 2))
