"""The source's columns derived from attributes: attributeColumns (named
attributes as STRING columns) and timestampAttribute (event time parsed
from an attribute as Beam reads it), against Google's official emulator,
published by Google's own Python client. One Spark session for the
module."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.options.attribute_columns import parse_event_times
from pubsub_go.spark.read.options.source import SourceOptions

BASE = {"subscriptionId": "projects/p/subscriptions/s", "emulatorHost": "127.0.0.1:1"}
UTC = timezone.utc


def test_event_times_parse_as_beam_reads_them() -> None:
    got = parse_event_times(pa.array([
        "1767225601234", "2026-01-01T00:00:01.234Z", "2026-01-01T02:00:01.234567891+02:00", "-1",
        None, "yesterday", "2026-01-01T00:00:01", "",
    ])).to_pylist()
    want = datetime(2026, 1, 1, 0, 0, 1, 234000, tzinfo=UTC)
    assert got[:4] == [want, want, want.replace(microsecond=234567), datetime(1969, 12, 31, 23, 59, 59, 999000,
                                                                              tzinfo=UTC)]
    assert got[4:] == [None] * 4  # missing, not a time, no zone (RFC 3339 needs one), empty


def test_rows_without_an_event_time_are_counted() -> None:
    opts = SourceOptions.parse({**BASE, "attributeColumns": "k", "timestampAttribute": "ts",
                                "timestampColumn": "et"})
    assert opts.derived is not None
    m = pa.array([[("ts", "5"), ("k", "v")], [("ts", "bad")], None], pa.map_(pa.string(), pa.string()))
    b = pa.record_batch([pa.array(["a", "b", "c"]), m], names=["message_id", "attributes"])
    out, errors = opts.derived.add(b)
    assert errors == 2 and out.schema.names == ["message_id", "attributes", "k", "et"]
    assert out.column("k").to_pylist() == ["v", None, None]
    assert out.column("et").to_pylist()[0] == datetime(1970, 1, 1, 0, 0, 0, 5000, tzinfo=UTC)


@pytest.mark.parametrize("options, expected", [
    ({"timestampColumn": "t"}, "timestampColumn is set but timestampAttribute is not"),
    ({"attributeColumns": "a,payload"}, "'payload' is already a column filled from the message"),
    ({"attributeColumns": "a,a"}, "'a' is named twice"),
    ({"attributeColumns": "a b"}, "not a usable column name"),
    ({"attributeColumns": "a", "format": "json"}, "apply to the raw schema"),
    ({"idAttributeWindowSeconds": "60"}, "idAttributeWindowSeconds needs idAttribute"),
    ({"idAttribute": "uid", "idAttributeWindowSeconds": "0"}, "idAttributeWindowSeconds=0 is out of range"),
])
def test_bad_options_name_the_option(options: dict[str, str], expected: str) -> None:
    with pytest.raises(OptionError, match=expected):
        SourceOptions.parse({**BASE, **options})


@pytest.fixture(scope="module")
def spark() -> Iterator:
    from sparkutil import registered_session

    yield from registered_session(app="pubsub-go-source-attributes", spark__sql__session__timeZone="UTC")


@pytest.mark.spark
@pytest.mark.timeout(240)
def test_attribute_columns_and_event_time(spark, google, tmp_path) -> None:
    topic, sub = google.topic(ack_deadline=30)
    attrs = [
        {"source": "web", "region": "eu", "ts": "1767225601234"},
        {"source": "app", "ts": "2026-01-01T00:00:01.5+01:00"},
        {"region": "us", "ts": "not a time"},
        {"source": "cli"},
    ]
    google.publish(topic, [b"m%d" % i for i in range(len(attrs))], attributes=attrs)
    df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
          .option("emulatorHost", google.host_port).option("batchLogLocation", str(tmp_path / "log"))
          .option("numPartitions", "1").option("attributeColumns", "source, region")
          .option("timestampAttribute", "ts").load())
    assert df.columns[-3:] == ["source", "region", "event_time"]
    assert dict(df.dtypes)["event_time"] == "timestamp"
    q = (df.writeStream.format("memory").queryName("attrcols").trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / "chk")).start())
    assert q.awaitTermination(180)
    assert q.exception() is None
    rows = {r.payload.decode(): r for r in spark.sql("SELECT * FROM attrcols").collect()}
    assert sorted(rows) == ["m0", "m1", "m2", "m3"]
    assert [(rows[f"m{i}"].source, rows[f"m{i}"].region) for i in range(4)] == \
        [("web", "eu"), ("app", None), (None, "us"), ("cli", None)]
    # The session's time zone is UTC: Spark hands back naive UTC datetimes.
    assert rows["m0"].event_time == datetime(2026, 1, 1, 0, 0, 1, 234000)
    assert rows["m1"].event_time == datetime(2025, 12, 31, 23, 0, 1, 500000)
    assert rows["m2"].event_time is None and rows["m3"].event_time is None
    assert rows["m0"].attributes["ts"] == "1767225601234"  # the map keeps every attribute


def _run_available_now(spark, google, sub: str, tmp_path, **options: str) -> None:
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
         .option("emulatorHost", google.host_port).option("batchLogLocation", str(tmp_path / "log"))
         .option("numPartitions", "1"))
    for k, v in options.items():
        r = r.option(k, v)
    q = (r.load().selectExpr("attributes['uid'] AS uid", "message_id").writeStream.format("parquet")
         .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "chk"))
         .trigger(availableNow=True).start())
    assert q.awaitTermination(180), "AvailableNow query did not stop on its own"
    assert q.exception() is None


@pytest.mark.spark
@pytest.mark.timeout(400)
def test_id_attribute_drops_republished_ids_across_a_restart(spark, google, tmp_path) -> None:
    topic, sub = google.topic(ack_deadline=30)
    uids = [{"uid": str(i)} for i in range(1000)]
    google.publish(topic, [b"first"] * 1000, attributes=uids)
    _run_available_now(spark, google, sub, tmp_path, idAttribute="uid")
    # The publisher retries all 1,000 (new message ids, same uids) and adds 100.
    google.publish(topic, [b"again"] * 1000 + [b"new"] * 100,
                   attributes=uids + [{"uid": str(i)} for i in range(1000, 1100)])
    _run_available_now(spark, google, sub, tmp_path, idAttribute="uid")  # restarted from its checkpoint
    out = spark.read.parquet(str(tmp_path / "out"))
    assert out.count() == 1100
    assert sorted(int(r.uid) for r in out.select("uid").collect()) == list(range(1100))
    assert google.pull_all(sub, max_wait=2) == []  # the dropped copies were acked
