"""Schema mode of the `pubsub-go` source against Google's official emulator:
payloads published with google-cloud-pubsub are decoded by WebAssembly in
the Go data plane and compared with Spark's own from_json / from_avro on
the same bytes; malformed records go to a dead-letter topic (read back with
Google's client); a hostile decoder is stopped and the session carries on."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path

import pytest

import pubsub_go
from guests import build_guest
from sparkutil import run_until, spark_session, stop_spark

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[1]
META = ("message_id", "publish_time", "attributes")


@pytest.fixture(scope="module")
def spark():
    stop_spark()  # a fresh context with this module's settings
    # 2 task attempts: a failing decoder fails the query quickly.
    s = spark_session(master="local[2,2]", app="schema-mode",
                      spark__sql__session__timeZone="UTC")
    pubsub_go.register(s)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def hostile_wasm(tmp_path_factory) -> Path:
    return build_guest("internal/testguests/hostile", tmp_path_factory.mktemp("hostile"))


def reader(spark, emulator, sub, tmp_path, schema=None, **opts):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
         .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / f"log-{sub[-10:]}"))
         .option("numPartitions", "2").option("maxWaitTimeMs", "300"))
    if schema is not None:
        r = r.schema(schema)
    for k, v in opts.items():
        r = r.option(k, str(v))
    return r.load()


def run_available_now(df, name, tmp_path, timeout=150):
    q = (df.writeStream.format("memory").queryName(name).trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / f"ckpt-{name}")).start())
    assert q.awaitTermination(timeout), f"query {name} did not finish"
    return q


def run_failing(df, name, tmp_path, timeout=150) -> str:
    """Runs an AvailableNow query that must fail; returns its error text."""
    from pyspark.errors import StreamingQueryException

    q = (df.writeStream.format("memory").queryName(name).trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / f"ckpt-{name}")).start())
    try:
        with pytest.raises(StreamingQueryException) as e:
            q.awaitTermination(timeout)
    finally:
        q.stop()
    return str(e.value)


def latest_metrics(query) -> list[dict]:
    out = []
    for p in query.recentProgress:
        latest = p["sources"][0].get("latestOffset")
        out.append(json.loads(latest) if isinstance(latest, str) else (latest or {}))
    return out


def compare_with_spark(spark, table, ids, payloads, ref_expr, decoded_cols):
    """Rows of `table` (the stream's output) equal Spark's own decoding
    (ref_expr over a static DataFrame of the same payload bytes), by message id."""
    static = spark.createDataFrame(list(zip(ids, payloads, strict=True)), "message_id STRING, payload BINARY")
    ref = {r.message_id: r.ref.asDict(recursive=True) for r in static.selectExpr("message_id", f"{ref_expr} AS ref")
           .collect()}
    got = {r.message_id: r for r in spark.sql(f"SELECT * FROM {table}").collect()}
    assert sorted(got) == sorted(ids), "every published message comes out exactly once"
    mismatches = []
    for mid, row in got.items():
        mine = {c: row.asDict(recursive=True)[c] for c in decoded_cols}
        if mine != ref[mid]:
            mismatches.append((mid, mine, ref[mid]))
    assert not mismatches, f"{len(mismatches)} rows differ from Spark's decoding, e.g. {mismatches[:2]}"
    return got


JSON_DDL = ("id BIGINT, qty INT, price DECIMAL(10,2), ratio DOUBLE, ok BOOLEAN, note STRING, at TIMESTAMP, "
            "day DATE, tags ARRAY<STRING>, props MAP<STRING, BIGINT>, "
            "customer STRUCT<name: STRING, address: STRUCT<city: STRING, zip: STRING>>, "
            "items ARRAY<STRUCT<sku: STRING, n: INT>>")


def json_payloads(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        d: dict = {
            "id": 10_000_000_000 + i, "qty": i - 3, "price": f"{i}.{i % 100:02d}" if i % 3 else i * 1.5,
            "ratio": i / 7, "ok": i % 2 == 0, "note": None if i % 5 == 0 else f"n\u00e9-{i} \"q\"",
            "at": ["2024-05-06T07:08:09.123456Z", "2024-02-29 23:59:59+02:00", 1714979289][i % 3],
            "day": f"2024-12-3{i % 2}", "tags": [f"t{j}" for j in range(i % 4)] if i % 6 else None,
            "props": {"a": i, "b": None} if i % 4 else {},
            "customer": {"name": f"c{i}", "address": None if i % 7 == 0 else {"city": "Oslo", "zip": None}},
            "items": [{"sku": f"s{i}", "n": i}, {"sku": None}], "ignored": {"deep": [1, 2, {"x": None}]},
        }
        if i % 8 == 0:
            del d["qty"], d["customer"]  # missing members are null
        out.append(json.dumps(d).encode())
    return out


def test_json_columns_equal_spark_from_json(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    payloads = json_payloads(120)
    ids = google.publish(topic, payloads, attributes=[{"i": str(i)} for i in range(len(payloads))])
    df = reader(spark, emulator, sub, tmp_path, schema=f"{JSON_DDL}, message_id STRING, publish_time TIMESTAMP, "
                "attributes MAP<STRING, STRING>", format="json")
    run_available_now(df, "json_mode", tmp_path)
    decoded = [f.name for f in df.schema.fields if f.name not in META]
    got = compare_with_spark(spark, "json_mode", ids, payloads, f"from_json(CAST(payload AS STRING), '{JSON_DDL}')",
                             decoded)
    row = got[ids[1]]
    assert row.attributes == {"i": "1"} and row.publish_time is not None
    assert row.price == Decimal("1.01") and row.customer.address.city == "Oslo" and row.items[1].sku is None
    assert got[ids[0]].qty is None and got[ids[0]].note is None  # missing member, explicit null


AVRO_SCHEMA = {
    "type": "record", "name": "Order", "namespace": "t", "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "ratio", "type": "double"},
        {"name": "weight", "type": "float"},
        {"name": "ok", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "props", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "name", "type": "string"},
            {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
                {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"]}]}]}]}},
        {"name": "raw", "type": "bytes"},
    ]}


def avro_sql_schema():
    """AVRO_SCHEMA as Spark types, for to_avro (nullability as in Avro)."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        DateType,
        DecimalType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    def f(name, t, nullable=False):
        return StructField(name, t, nullable)

    address = StructType([f("city", StringType()), f("zip", StringType(), True)])
    return StructType([
        f("id", LongType()), f("qty", IntegerType()), f("price", DecimalType(10, 2)), f("ratio", DoubleType()),
        f("weight", FloatType()), f("ok", BooleanType()), f("note", StringType(), True), f("at", TimestampType()),
        f("day", DateType()), f("status", StringType()), f("tags", ArrayType(StringType(), False)),
        f("props", MapType(StringType(), LongType(), True)),
        f("customer", StructType([f("name", StringType()), f("address", address, True)])),
        f("raw", BinaryType()),
    ])


def avro_payloads(spark, n: int) -> list[bytes]:
    """Avro binary written by Spark's own to_avro (an encoder independent of ours)."""
    import datetime as dt

    rows = []
    for i in range(n):
        rows.append((
            -i * 1_000_003, i, Decimal(f"{i}.{i % 100:02d}"), i / 3, i * 0.5, i % 2 == 1,
            None if i % 4 == 0 else f"note-{i} \u2713",
            dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc) + dt.timedelta(hours=i),
            dt.date(2000, 1, 1) + dt.timedelta(days=i * 97), ["NEW", "PAID", "SHIPPED"][i % 3],
            [f"t{j}" for j in range(i % 3)], {"a": i, "z": None} if i % 2 else {},
            (f"cust-{i}", None if i % 5 == 0 else ("Bergen", None if i % 2 else f"{5000 + i}")),
            bytes([i % 256, 0, 255]),
        ))
    df = spark.createDataFrame(rows, avro_sql_schema())
    return [r.b for r in df.selectExpr(f"to_avro(struct(*), '{json.dumps(AVRO_SCHEMA)}') AS b").collect()]


def test_avro_schema_derived_and_columns_equal_spark_from_avro(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    payloads = avro_payloads(spark, 90)
    ids = google.publish(topic, payloads)
    # No .schema(): derived from avroSchema as from_avro does, plus metadata columns.
    df = reader(spark, emulator, sub, tmp_path, format="avro", avroSchema=json.dumps(AVRO_SCHEMA))
    ref_expr = f"from_avro(payload, '{json.dumps(AVRO_SCHEMA)}')"
    ref_schema = spark.createDataFrame([(b"",)], "payload BINARY").selectExpr(f"{ref_expr} AS r").schema[0].dataType
    assert [f.simpleString() for f in df.schema.fields] == [
        *(f.simpleString() for f in ref_schema.fields), "message_id:string", "publish_time:timestamp",
        "attributes:map<string,string>"]
    run_available_now(df, "avro_mode", tmp_path)
    decoded = [f.name for f in ref_schema.fields]
    got = compare_with_spark(spark, "avro_mode", ids, payloads, ref_expr, decoded)
    r = got[ids[7]]
    assert r.status == "PAID" and r.customer.address.zip is None and r.props == {"a": 7, "z": None}
    assert got[ids[8]].customer.address.zip == "5008" and got[ids[0]].note is None


def test_malformed_records_go_to_the_dead_letter_topic(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    dlq_topic, dlq_sub = google.topic(ack_deadline=30)
    good = [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(30)]
    bad = [b'{"id": "not a number"}', b"\xff\xfe not json", b'{"id": 1,']
    payloads = good[:10] + bad[:1] + good[10:20] + bad[1:] + good[20:]
    attrs = [{"src": "test", "n": str(i)} for i in range(len(payloads))]
    ids = google.publish(topic, payloads, attributes=attrs)
    bad_ids = {ids[payloads.index(b)] for b in bad}
    df = reader(spark, emulator, sub, tmp_path, schema="id BIGINT, name STRING, message_id STRING", format="json",
                deadLetterTopicId=dlq_topic.rsplit("/", 1)[1], projectId=google.project)
    q = (df.writeStream.format("memory").queryName("dlq_mode")
         .option("checkpointLocation", str(tmp_path / "ckpt-dlq")).start())
    try:
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM dlq_mode").first().c >= 30
                  and any(m.get("deadLettered", 0) >= 3 for m in latest_metrics(q)))
    finally:
        q.stop()
    rows = spark.sql("SELECT * FROM dlq_mode").collect()
    assert sorted(r.message_id for r in rows) == sorted(set(ids) - bad_ids), "every good record, no bad one"
    assert {r.id for r in rows} == set(range(30))
    m = max(latest_metrics(q), key=lambda m: m.get("deadLettered", 0))
    assert m["deadLettered"] == 3 and m["decodeErrors"] == 3, m

    dead = google.pull_all(dlq_sub, max_wait=3)
    assert sorted(d.message.data for d in dead) == sorted(bad)
    for d in dead:
        a = dict(d.message.attributes)
        assert a["src"] == "test" and a["pubsub_go_message_id"] in bad_ids, a
        assert a["pubsub_go_decode_error"], "the decode error travels with the payload"
        assert a["pubsub_go_subscription"] == sub
    # Acked at the source: nothing comes back.
    assert google.pull_all(sub, max_wait=2) == []


def test_column_and_fail_modes(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    ids = google.publish(topic, [b'{"id": 1}', b'{"id": true}', b'{"id": 3}'])
    df = reader(spark, emulator, sub, tmp_path, schema="id BIGINT, err STRING, message_id STRING", format="json",
                onDecodeError="column", errorColumn="err")
    run_available_now(df, "column_mode", tmp_path)
    rows = {r.message_id: r for r in spark.sql("SELECT * FROM column_mode").collect()}
    assert (rows[ids[0]].id, rows[ids[0]].err) == (1, None) and rows[ids[2]].id == 3
    assert rows[ids[1]].id is None and rows[ids[1]].err, "the failed row is kept, with its error"

    topic, sub = google.topic(ack_deadline=30)
    bad_id = google.publish(topic, [b'{"id": 1}', b'{"id": [}'])[1]
    df = reader(spark, emulator, sub, tmp_path, schema="id BIGINT", format="json")  # default: fail
    err = run_failing(df, "fail_mode", tmp_path)
    assert "onDecodeError=fail" in err and bad_id in err, err[-2000:]
    # Nacked, not lost.
    assert bad_id in {m.message.message_id for m in google.pull_all(sub, max_wait=3)}


def test_hostile_decoder_is_stopped_and_the_session_carries_on(spark, google, emulator, tmp_path, hostile_wasm):
    for payload, opts, expect in [
        (b"loop", {"decoderTimeoutMs": 1000}, ["DEADLINE_EXCEEDED", "exceeded its time limit",
                                               "decoderTimeoutMs=1000"]),
        (b"alloc", {"decoderMemoryLimitMB": 48}, ["RESOURCE_EXHAUSTED", "memory limit of 48 MiB",
                                                 "decoderMemoryLimitMB=48"]),
    ]:
        topic, sub = google.topic(ack_deadline=30)
        google.publish(topic, [payload])
        df = reader(spark, emulator, sub, tmp_path, schema="v STRING", decoder=str(hostile_wasm), **opts)
        start = time.monotonic()
        err = run_failing(df, f"hostile_{payload.decode()}", tmp_path)
        assert all(x in err for x in [*expect, "hostile.wasm decoder"]), err[-3000:]
        assert "crashed" not in err.lower() and "exited unexpectedly" not in err, "the Python worker survives"
        assert time.monotonic() - start < 120
    # The same session (and its Python workers) still decodes.
    topic, sub = google.topic(ack_deadline=30)
    ids = google.publish(topic, [b"ok"])
    df = reader(spark, emulator, sub, tmp_path, schema="v STRING, message_id STRING", decoder=str(hostile_wasm))
    run_available_now(df, "hostile_after", tmp_path)
    assert [tuple(r) for r in spark.sql("SELECT v, message_id FROM hostile_after").collect()] == [("ok", ids[0])]


def test_wazero_engine_decodes_and_stops_a_hostile_decoder(spark, google, emulator, tmp_path, hostile_wasm):
    """decoderEngine=wazero, the fallback where the wasmtime package is not
    installed (the test above runs the default, wasmtime here): the same
    rows, within the same limits."""
    topic, sub = google.topic(ack_deadline=30)
    ids = google.publish(topic, [b"ok"])
    df = reader(spark, emulator, sub, tmp_path, schema="v STRING, message_id STRING", decoder=str(hostile_wasm),
                decoderEngine="wazero")
    run_available_now(df, "wazero_ok", tmp_path)
    assert [tuple(r) for r in spark.sql("SELECT v, message_id FROM wazero_ok").collect()] == [("ok", ids[0])]
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"loop"])
    df = reader(spark, emulator, sub, tmp_path, schema="v STRING", decoder=str(hostile_wasm),
                decoderEngine="wazero", decoderTimeoutMs=1000)
    err = run_failing(df, "wazero_loop", tmp_path)
    assert all(x in err for x in ["DEADLINE_EXCEEDED", "exceeded its time limit", "decoderTimeoutMs=1000"]), err[-3000:]
    assert "crashed" not in err.lower() and "exited unexpectedly" not in err, "the Python worker survives"


def test_options_are_validated_up_front(spark, emulator, tmp_path):
    """Bad options fail at load() (no .schema()) or when the query starts
    (PySpark creates the source only then when a .schema() is given), on the
    driver, before any task runs."""
    cases = [
        (None, {"format": "xml"}, "format='xml' is not supported"),
        ("id BIGINT", {"format": "xml"}, "format='xml' is not supported"),
        (None, {"format": "avro"}, "avroSchema is required"),
        (None, {"format": "avro", "avroSchema": "{nope"}, "avroSchema is not valid JSON"),
        ("id BIGINT", {"decoder": "/nonexistent/d.wasm"}, "decoder='/nonexistent/d.wasm': no such file"),
        ("id BIGINT", {"format": "json", "errorColumn": "e"}, "errorColumn only applies to onDecodeError=column"),
        ("id BIGINT", {"format": "json", "onDecodeError": "deadletter"}, "needs option deadLetterTopicId"),
        ("id BIGINT", {"format": "json", "onDecodeError": "skip"}, "onDecodeError='skip'"),
        ("id BIGINT", {"format": "json", "decoderEngine": "v8"}, "is not one of auto, wazero, wasmtime"),
        ("id BIGINT", {"format": "json", "decoderEngine": "wasmtime"}, "decoderEngine applies to a decoder module"),
        (None, {"avroSchema": "{}"}, "avroSchema only applies to schema mode"),
        (None, {"format": "json"}, "format=json needs a schema"),
        ("id BIGINT, publish_time STRING", {"format": "json"}, "publish_time is filled from the message"),
        ("id BIGINT", {"format": "json", "onDecodeError": "column"}, "add `_decode_error STRING`"),
        ("id BIGINT", {}, "needs schema mode"),
        ("id INTERVAL DAY", {"format": "json"}, "json decoder rejects"),
    ]
    for i, (schema, opts, msg) in enumerate(cases):
        try:
            df = reader(spark, emulator, "projects/p/subscriptions/s", tmp_path, schema=schema, **opts)
            q = df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / f"ckpt-opt-{i}")).start()
        except Exception as e:
            assert msg in str(e), (opts, str(e)[-1500:])
            continue
        try:
            with pytest.raises(Exception) as e:
                q.awaitTermination(60)
            assert msg in str(e.value), (opts, str(e.value)[-1500:])
        finally:
            q.stop()


def test_protobuf_source_text_derives_the_columns_and_decodes_as_decode_does(spark, tmp_path):
    """format=protobuf with .proto source text (compiled in Go), no
    .schema(), on the embedded emulator: the columns are derived from the
    message type on the driver, and the rows equal pubsub_go.decode's of the
    same payloads (which tests/test_protobuf.py checks against Google's
    parser); a truncated payload keeps its row with the error (column mode)."""
    import pyarrow as pa

    from emulators import topic_with_messages
    from protobuf_vectors import DESCRIPTOR_SET, SOURCE, events, normalize, spark_row

    payloads = [m.SerializeToString() for m in events(12)]
    ref = pubsub_go.decode(pa.array(payloads), format="protobuf", protobuf_descriptor_set=DESCRIPTOR_SET,
                           protobuf_message="pgtest.Event")
    payloads.append(b"\x12\xff")  # truncated: kept with its error (onDecodeError=column)
    with pubsub_go.Emulator() as emu:
        sub = topic_with_messages(emu.host_port, "pb", payloads, ack_deadline_seconds=60)
        df = reader(spark, emu, sub, tmp_path, format="protobuf", protobufSource=SOURCE,
                    protobufMessage="pgtest.Event", onDecodeError="column")
        assert df.schema.names == [*ref.schema.names[:-1], *META, "_decode_error"]
        assert df.schema["counts"].dataType.simpleString() == "map<string,bigint>"
        run_available_now(df, "protobuf_mode", tmp_path)
        rows = spark.sql("SELECT * FROM protobuf_mode").collect()
    failed = [r for r in rows if r["_decode_error"] is not None]
    assert len(failed) == 1 and "malformed protobuf" in failed[0]["_decode_error"] and failed[0]["id"] is None
    got = [r for r in rows if r["_decode_error"] is None]
    want = {r["id"]: {k: v for k, v in normalize(r).items() if k != "__decode_error"} for r in ref.to_pylist()}
    assert sorted(spark_row(r)["id"] for r in got) == sorted(want)
    for r in got:
        row = spark_row(r)
        assert {k: row[k] for k in want[row["id"]]} == want[row["id"]]
