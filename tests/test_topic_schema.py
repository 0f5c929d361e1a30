"""schemaFrom=topic against Google's official emulator: topics with a
Pub/Sub Avro schema (made with Google's own SchemaServiceClient), messages
published by Google's client in BINARY and JSON encoding, decoded by the
revision each message names into the columns Spark's from_avro gives; a
revision committed while the query runs; the bad cases answered by the
decode-error policy; protocol buffer revisions (on the embedded emulator:
Google's has no protocol buffer schemas)."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from google_peer import GoogleClients
from pubsub_go import Emulator
from sparkutil import registered_session, run_until
from test_schema_mode import AVRO_SCHEMA, META, avro_payloads, reader, run_available_now

pytestmark = pytest.mark.spark

V1 = {"type": "record", "name": "Item", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
V2 = {"type": "record", "name": "Item", "fields": [*V1["fields"],
                                                    {"name": "extra", "type": ["null", "string"], "default": None}]}
V3 = {"type": "record", "name": "Item", "fields": [*V2["fields"], {"name": "more", "type": "int", "default": 0}]}
REVISION = "googclient_schemarevisionid"


@pytest.fixture(scope="module")
def spark():
    yield from registered_session(master="local[2,2]", app="topic-schema", spark__sql__session__timeZone="UTC")


@pytest.fixture(scope="module")
def schemas(google):
    from google.cloud.pubsub import SchemaServiceClient

    return SchemaServiceClient()  # google set PUBSUB_EMULATOR_HOST


def create_schema(google, schemas, definition: dict):
    from google.pubsub_v1.types import Schema

    return schemas.create_schema(request={
        "parent": f"projects/{google.project}", "schema_id": f"sch-{uuid.uuid4().hex[:10]}",
        "schema": Schema(type_=Schema.Type.AVRO, definition=json.dumps(definition))})


def commit(schemas, name: str, definition: dict):
    from google.pubsub_v1.types import Schema

    return schemas.commit_schema(request={"name": name, "schema": Schema(
        name=name, type_=Schema.Type.AVRO, definition=json.dumps(definition))})


def schema_topic(google, schema: str | None, encoding: str = "BINARY", subs: int = 1) -> tuple[str, list[str]]:
    """A topic (with the schema, if given) and subscriptions on it."""
    suffix = uuid.uuid4().hex[:10]
    topic = f"projects/{google.project}/topics/ts-{suffix}"
    req: dict = {"name": topic}
    if schema:
        req["schema_settings"] = {"schema": schema, "encoding": encoding}
    google.publisher.create_topic(request=req)
    names = [f"projects/{google.project}/subscriptions/ts-{suffix}-{i}" for i in range(subs)]
    for s in names:
        google.subscriber.create_subscription(request={"name": s, "topic": topic, "ack_deadline_seconds": 30})
    return topic, names


def item(i: int, name: str, extra: str | None = None, v2: bool = False) -> bytes:
    """An Item datum in Avro's binary encoding, written out by hand."""
    def varint(v: int) -> bytes:
        u, out = (v << 1) ^ (v >> 63), b""
        while u >= 0x80:
            out, u = out + bytes([u & 0x7F | 0x80]), u >> 7
        return out + bytes([u])
    out = varint(i) + varint(len(name.encode())) + name.encode()
    if v2:
        out += varint(0) if extra is None else varint(1) + varint(len(extra)) + extra.encode()
    return out


def avro_json(r: dict, at_us: int, day: int) -> bytes:
    """A from_avro row of AVRO_SCHEMA in Avro's JSON encoding (unions as
    {"type": value}, bytes as ISO-8859-1 strings), as Pub/Sub validates it."""
    unscaled = int(r["price"].scaleb(2))
    price = unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)
    cust = r["customer"]
    addr = cust["address"]
    return json.dumps({
        "id": r["id"], "qty": r["qty"], "price": price.decode("latin-1"), "ratio": r["ratio"],
        "weight": r["weight"], "ok": r["ok"], "note": None if r["note"] is None else {"string": r["note"]},
        "at": at_us, "day": day, "status": r["status"], "tags": r["tags"],
        "props": {k: None if v is None else {"long": v} for k, v in r["props"].items()},
        "customer": {"name": cust["name"], "address": None if addr is None else {"t.Address": {
            "city": addr["city"], "zip": None if addr["zip"] is None else {"string": addr["zip"]}}}},
        "raw": r["raw"].decode("latin-1"),
    }).encode()


def test_binary_and_json_messages_decode_like_from_avro(spark, google, schemas, emulator, tmp_path):
    s = create_schema(google, schemas, AVRO_SCHEMA)
    payloads = avro_payloads(spark, 20)
    ref_expr = f"from_avro(payload, '{json.dumps(AVRO_SCHEMA)}')"
    ref = (spark.createDataFrame([(p,) for p in payloads], "payload BINARY")
           .selectExpr(f"{ref_expr} AS r").selectExpr("r", "unix_micros(r.at) AS at_us", "unix_date(r.day) AS d")
           .collect())
    # The same records in both encodings, in one stream: the topic's
    # encoding is switched from BINARY to JSON between the two halves.
    topic, (sub,) = schema_topic(google, s.name, "BINARY")
    google.publish(topic, payloads)
    google.publisher.update_topic(request={"topic": {"name": topic, "schema_settings": {
        "schema": s.name, "encoding": "JSON"}}, "update_mask": {"paths": ["schema_settings"]}})
    google.publish(topic, [avro_json(x.r.asDict(recursive=True), x.at_us, x.d) for x in ref])

    df = reader(spark, emulator, sub, tmp_path, schemaFrom="topic", quietPeriodMs=1500)  # no .schema() or avroSchema
    ref_schema = spark.createDataFrame([(b"",)], "payload BINARY").selectExpr(f"{ref_expr} AS r").schema[0].dataType
    assert [f.simpleString() for f in df.schema.fields[:-3]] == [f.simpleString() for f in ref_schema.fields]
    assert df.columns[-3:] == list(META)
    run_available_now(df, "ts_encodings", tmp_path)
    decoded = [f.name for f in ref_schema.fields]
    want = {x.r.id: x.r.asDict(recursive=True) for x in ref}
    for encoding in ("BINARY", "JSON"):
        got = {r.id: {c: r.asDict(recursive=True)[c] for c in decoded} for r in spark.sql(
            f"SELECT * FROM ts_encodings WHERE attributes['googclient_schemaencoding'] = '{encoding}'").collect()}
        assert sorted(got) == sorted(want), encoding
        bad = [(k, got[k], w) for k, w in want.items() if got[k] != w]
        assert not bad, f"{encoding}: {len(bad)} rows differ from from_avro, e.g. {bad[:1]}"


def test_old_and_new_revisions_decode_in_one_stream(spark, google, schemas, emulator, tmp_path):
    s = create_schema(google, schemas, V1)
    topic, (sub,) = schema_topic(google, s.name)
    google.publish(topic, [item(i, f"old{i}") for i in range(3)])
    r2 = commit(schemas, s.name, V2)  # adds an optional field
    google.publish(topic, [item(10 + i, f"new{i}", extra=f"x{i}", v2=True) for i in range(3)])
    # The query reads into the newest revision; revision 3, committed while
    # it runs, is fetched by its executors.
    df = reader(spark, emulator, sub, tmp_path, schemaFrom="topic")
    assert df.columns == ["id", "name", "extra", *META]
    q = (df.writeStream.format("memory").queryName("ts_revisions")
         .option("checkpointLocation", str(tmp_path / "ckpt-revisions")).start())
    try:
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM ts_revisions").first().c >= 6)
        r3 = commit(schemas, s.name, V3)
        google.publish(topic, [item(20 + i, f"v3-{i}", extra="y", v2=True) + b"\x04" for i in range(2)])
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM ts_revisions").first().c >= 8)
    finally:
        q.stop()
    rows = spark.sql("SELECT * FROM ts_revisions").collect()
    assert sorted((r.id, r.name, r.extra) for r in rows) == [
        (0, "old0", None), (1, "old1", None), (2, "old2", None), (10, "new0", "x0"), (11, "new1", "x1"),
        (12, "new2", "x2"), (20, "v3-0", "y"), (21, "v3-1", "y")]
    by_rev = {rev: sorted(r.id for r in rows if r.attributes[REVISION] == rev)
              for rev in (s.revision_id, r2.revision_id, r3.revision_id)}
    assert by_rev == {s.revision_id: [0, 1, 2], r2.revision_id: [10, 11, 12], r3.revision_id: [20, 21]}


def test_messages_that_cannot_be_decoded_by_their_revision(spark, google, schemas, emulator, tmp_path):
    s = create_schema(google, schemas, V1)
    r2 = commit(schemas, s.name, V2)
    topic, (sub,) = schema_topic(google, None)
    (plain,) = google.publish(topic, [b"published before the topic had a schema"])
    google.publisher.update_topic(request={"topic": {"name": topic, "schema_settings": {
        "schema": s.name, "encoding": "BINARY"}}, "update_mask": {"paths": ["schema_settings"]}})
    good, orphan = google.publish(topic, [item(1, "ok"), item(2, "v2 only", extra="e", v2=True)])
    schemas.delete_schema_revision(request={"name": f"{s.name}@{r2.revision_id}"})

    df = reader(spark, emulator, sub, tmp_path, schemaFrom="topic", onDecodeError="column", quietPeriodMs=1500)
    run_available_now(df, "ts_bad", tmp_path)
    rows = {r.message_id: r for r in spark.sql("SELECT * FROM ts_bad").collect()}
    assert sorted(rows) == sorted([plain, good, orphan])
    assert rows[good]._decode_error is None and (rows[good].id, rows[good].name) == (1, "ok")
    err = rows[plain]._decode_error
    assert f"message {plain} has no googclient_schemarevisionid" in err and rows[plain].id is None, err
    err = rows[orphan]._decode_error
    assert f"message {orphan}, schema revision _deleted-schema-revision_: its revision was deleted" in err, err


PROTO_V1 = 'syntax = "proto3";\npackage shop;\nmessage Item {\n  int64 id = 1;\n  string name = 2;\n}\n'
PROTO_V2 = PROTO_V1.replace("}\n", "  optional string extra = 3;\n}\n")


def test_protobuf_revisions_in_both_encodings(spark, tmp_path):
    """On the embedded emulator: Google's emulator has no protocol buffer
    schemas (UNIMPLEMENTED)."""
    with Emulator() as emu:
        before = os.environ.get("PUBSUB_EMULATOR_HOST")
        google = GoogleClients(emu.host_port)
        from google.cloud.pubsub import SchemaServiceClient

        schemas = SchemaServiceClient()
        os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        if before is not None:  # leave the session's clients' setting as it was
            os.environ["PUBSUB_EMULATOR_HOST"] = before
        protobuf_revisions(spark, google, schemas, emu, tmp_path)


def protobuf_revisions(spark, google, schemas, emulator, tmp_path):
    from google.pubsub_v1.types import Schema

    s = schemas.create_schema(request={
        "parent": f"projects/{google.project}", "schema_id": f"sch-{uuid.uuid4().hex[:10]}",
        "schema": Schema(type_=Schema.Type.PROTOCOL_BUFFER, definition=PROTO_V1)})
    topic, (sub,) = schema_topic(google, s.name, "BINARY")
    google.publish(topic, [b"\x08\x05\x12\x03old"])  # id=5, name="old", written by hand
    schemas.commit_schema(request={"name": s.name, "schema": Schema(
        name=s.name, type_=Schema.Type.PROTOCOL_BUFFER, definition=PROTO_V2)})
    google.publisher.update_topic(request={"topic": {"name": topic, "schema_settings": {
        "schema": s.name, "encoding": "JSON"}}, "update_mask": {"paths": ["schema_settings"]}})
    google.publish(topic, [json.dumps({"id": "7", "name": "new", "extra": "e"}).encode()])

    df = reader(spark, emulator, sub, tmp_path, schemaFrom="topic", quietPeriodMs=1500)
    assert df.columns == ["id", "name", "extra", *META]
    run_available_now(df, "ts_protobuf", tmp_path)
    rows = spark.sql("SELECT * FROM ts_protobuf").collect()
    assert sorted((r.id, r.name, r.extra, r.attributes["googclient_schemaencoding"]) for r in rows) == [
        (5, "old", None, "BINARY"), (7, "new", "e", "JSON")]


def test_streaming_sink_encodes_each_micro_batch_to_the_topics_schema(spark, google, schemas, emulator, tmp_path):
    """writeStream with schemaFrom=topic: rows from a file stream, two
    micro-batches, encoded to the newest revision (Avro BINARY), equal to
    Avro's bytes for the same records as Google's client reads them."""
    s = create_schema(google, schemas, V1)
    r2 = commit(schemas, s.name, V2)
    topic, (sub,) = schema_topic(google, s.name, "BINARY")
    src = tmp_path / "in"
    rows = [(i, f"n{i}", None if i % 2 else f"e{i}") for i in range(10)]
    for part in (rows[:5], rows[5:]):  # two files, one per micro-batch
        spark.createDataFrame(part, "id BIGINT, name STRING, extra STRING").coalesce(1).write.mode("append").parquet(
            str(src))
    q = (spark.readStream.schema("id BIGINT, name STRING, extra STRING").option("maxFilesPerTrigger", "1")
         .parquet(str(src)).writeStream.format("pubsub-go").option("topicId", topic)
         .option("emulatorHost", emulator.host_port).option("schemaFrom", "topic")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    assert q.awaitTermination(120), "the availableNow query did not finish"
    assert q.exception() is None
    assert len([p for p in q.recentProgress if p["numInputRows"]]) == 2, "one micro-batch per file"
    got = google.pull_all(sub, max_wait=1.0)
    assert sorted(m.message.data for m in got) == sorted(item(i, n, e, v2=True) for i, n, e in rows)
    assert {m.message.attributes[REVISION] for m in got} == {r2.revision_id}


# The sink (schemaFrom=topic on df.write): rows' columns are encoded to the
# topic's Avro schema; Google's emulator validates every message.

def sink_rows(spark, n: int):
    """Rows of AVRO_SCHEMA's fields, as Spark's from_avro types them, and
    the same records as Spark's to_avro wrote them."""
    payloads = avro_payloads(spark, n)
    ref = json.dumps(AVRO_SCHEMA)
    df = (spark.createDataFrame([(p,) for p in payloads], "payload BINARY")
          .selectExpr(f"from_avro(payload, '{ref}') AS r").select("r.*"))
    return df, payloads


def write_to(df, emulator, topic: str, **opts) -> None:
    w = (df.write.format("pubsub-go").mode("append").option("topicId", topic)
         .option("emulatorHost", emulator.host_port).option("schemaFrom", "topic"))
    for k, v in opts.items():
        w = w.option(k, v)
    w.save()


def test_sink_encodes_rows_to_the_topics_avro_schema(spark, google, schemas, emulator):
    df, payloads = sink_rows(spark, 12)
    s = create_schema(google, schemas, AVRO_SCHEMA)
    # BINARY: byte for byte what Spark's own to_avro writes.
    topic, (sub,) = schema_topic(google, s.name, "BINARY")
    write_to(df.selectExpr("*", "map('k', CAST(id AS STRING)) AS attributes"), emulator, topic)
    got = google.pull_all(sub, max_wait=1.0)
    assert sorted(m.message.data for m in got) == sorted(payloads)
    assert all(m.message.attributes["k"] == str(-i * 1_000_003) for m in got for i in [
        payloads.index(m.message.data)]), "the attributes column is the message's attributes"
    # JSON: Avro's JSON encoding (unions as {"type": value}), equal to the
    # same records written by hand.
    topic, (sub,) = schema_topic(google, s.name, "JSON")
    write_to(df, emulator, topic)
    ref = df.selectExpr("struct(*) AS r", "unix_micros(at) AS at_us", "unix_date(day) AS d").collect()
    want = sorted((json.loads(avro_json(x.r.asDict(recursive=True), x.at_us, x.d)) for x in ref), key=lambda r: r["id"])
    got = sorted((json.loads(m.message.data) for m in google.pull_all(sub, max_wait=1.0)), key=lambda r: r["id"])
    assert got == want


def test_sink_rows_that_do_not_fit_the_schema_fail_the_write(spark, google, schemas, emulator):
    from pyspark.errors import PySparkException
    from pyspark.sql.utils import CapturedException

    s = create_schema(google, schemas, V2)
    topic, (sub,) = schema_topic(google, s.name, "BINARY")
    # At start, before any task: a column of the wrong type, a column the
    # schema lacks, a payload column.
    for sql, want in [
        ("CAST(1 AS BIGINT) AS id, 2 AS name", "column name has type int32, which does not fit the schema's string"),
        ("CAST(1 AS BIGINT) AS id, 'a' AS name, 3 AS other", "column other (int32) is not a field of Item"),
        ("CAST(1 AS BIGINT) AS id, 'a' AS name, X'00' AS payload", "column 'payload' does not go with schemaFrom"),
    ]:
        with pytest.raises((PySparkException, CapturedException)) as e:
            write_to(spark.sql(f"SELECT {sql}"), emulator, topic)
        assert want in str(e.value), str(e.value)
    # At run time: a null where the schema has none fails naming column and row.
    with pytest.raises((PySparkException, CapturedException)) as e:
        write_to(spark.sql("SELECT CAST(1 AS BIGINT) AS id, 'a' AS name UNION ALL "
                           "SELECT 2, CAST(NULL AS STRING)").coalesce(1), emulator, topic)
    assert "column name is null but the schema's string is not nullable" in str(e.value), str(e.value)
    # A topic without a schema is named.
    plain, _ = schema_topic(google, None)
    with pytest.raises((PySparkException, CapturedException)) as e:
        write_to(spark.sql("SELECT 1 AS id"), emulator, plain)
    assert "schemaFrom=topic" in str(e.value), str(e.value)


SINK_PROTO = """syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string name = 2;
  repeated string tags = 3;
  map<string, int64> props = 4;
  enum Status { NEW = 0; DONE = 1; }
  Status status = 5;
  message Addr { string city = 1; }
  Addr addr = 6;
}
"""


def sink_proto_class():
    """SINK_PROTO's Order as a Python protobuf class, built from a
    hand-written descriptor (Google's protobuf runtime parses the bytes)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name=f"sink_{uuid.uuid4().hex[:8]}.proto", package="shop", syntax="proto3")
    order = fdp.message_type.add(name="Order")
    order.enum_type.add(name="Status").value.extend([
        descriptor_pb2.EnumValueDescriptorProto(name="NEW", number=0),
        descriptor_pb2.EnumValueDescriptorProto(name="DONE", number=1)])
    order.nested_type.add(name="Addr").field.add(name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry = order.nested_type.add(name="PropsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    order.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    order.field.add(name="name", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    order.field.add(name="tags", number=3, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    order.field.add(name="props", number=4, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                    type_name=".shop.Order.PropsEntry")
    order.field.add(name="status", number=5, type=F.TYPE_ENUM, label=F.LABEL_OPTIONAL, type_name=".shop.Order.Status")
    order.field.add(name="addr", number=6, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".shop.Order.Addr")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def pull_n(google, sub: str, n: int) -> list:
    """n messages by Google's synchronous Pull (the embedded emulator
    answers an empty pull with DEADLINE_EXCEEDED, so stop at n)."""
    out: list = []
    while len(out) < n:
        resp = google.subscriber.pull(request={"subscription": sub, "max_messages": 1000}, timeout=30)
        out.extend(resp.received_messages)
    google.subscriber.acknowledge(request={"subscription": sub, "ack_ids": [m.ack_id for m in out]})
    return out


def test_sink_encodes_rows_to_a_protobuf_schema(spark):
    """On the embedded emulator, which validates protocol buffer messages
    (Google's has no protocol buffer schemas)."""
    from google.protobuf import json_format
    from google.pubsub_v1.types import Schema

    rows = [(i, f"n{i}", [f"t{j}" for j in range(i % 3)], {"a": i} if i % 2 else {}, ["NEW", "DONE"][i % 2],
             None if i % 3 == 0 else (f"c{i}",)) for i in range(6)]
    df = spark.createDataFrame(rows, "id BIGINT, name STRING, tags ARRAY<STRING>, props MAP<STRING,BIGINT>, "
                                     "status STRING, addr STRUCT<city: STRING>")
    Order = sink_proto_class()
    want = sorted((Order(id=i, name=n, tags=t, props=p, status=s, addr=None if a is None else Order.Addr(city=a[0]))
                   for i, n, t, p, s, a in rows), key=lambda m: m.id)
    with Emulator() as emu:
        before = os.environ.get("PUBSUB_EMULATOR_HOST")
        google = GoogleClients(emu.host_port)
        from google.cloud.pubsub import SchemaServiceClient

        schemas = SchemaServiceClient()
        os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        if before is not None:
            os.environ["PUBSUB_EMULATOR_HOST"] = before
        s = schemas.create_schema(request={
            "parent": f"projects/{google.project}", "schema_id": f"sch-{uuid.uuid4().hex[:10]}",
            "schema": Schema(type_=Schema.Type.PROTOCOL_BUFFER, definition=SINK_PROTO)})
        for encoding in ("BINARY", "JSON"):
            topic, (sub,) = schema_topic(google, s.name, encoding)
            write_to(df, emu, topic)
            got = []
            for m in pull_n(google, sub, len(rows)):
                o = Order()
                if encoding == "BINARY":
                    o.ParseFromString(m.message.data)
                else:
                    json_format.Parse(m.message.data, o)
                got.append(o)
            assert sorted(got, key=lambda m: m.id) == want, encoding


def test_sink_encodes_to_the_newest_or_the_pinned_revision(spark, google, schemas, emulator):
    s = create_schema(google, schemas, V1)
    first = s.revision_id
    r2 = commit(schemas, s.name, V2)  # adds an optional field
    topic, (sub,) = schema_topic(google, s.name, "JSON")
    df = spark.sql("SELECT CAST(1 AS BIGINT) AS id, 'a' AS name, 'e' AS extra")
    write_to(df, emulator, topic)  # the newest revision has extra
    (m,) = google.pull_all(sub, max_wait=1.0)
    assert json.loads(m.message.data) == {"id": 1, "name": "a", "extra": {"string": "e"}}
    assert m.message.attributes[REVISION] == r2.revision_id
    from pyspark.errors import PySparkException
    from pyspark.sql.utils import CapturedException

    with pytest.raises((PySparkException, CapturedException)) as e:
        write_to(df, emulator, topic, schemaRevision=first)
    assert f"revision {first}: column extra (utf8) is not a field of Item" in str(e.value), str(e.value)
