"""format=protobuf against Spark's own from_protobuf: the same messages
(nested, repeated, map, enum, Timestamp, wrapper, oneof, proto3 optional,
absent fields, wire forms Google's serializer never writes) decoded by
pubsub_go.decode and by from_protobuf with its default options must give
the same rows and the same column types; their protobuf JSON encoding
decodes to the same rows.

Needs spark-protobuf, which Spark does not ship: PUBSUB_GO_SPARK_PROTOBUF
names it, as Maven coordinates (org.apache.spark:spark-protobuf_2.13:<the
installed PySpark>, fetched through spark.jars.packages) or as local jars
(bench/tools/build_spark_protobuf.sh builds them where Maven Central's is not
served). Without it the module skips: nothing else can stand in for Spark
here (tests/test_protobuf.py checks the same rows against Google's parser)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from google.protobuf import json_format

import pubsub_go
from protobuf_vectors import DESCRIPTOR_SET, Event, descriptor_set_with_imports, events, normalize, spark_row
from sparkutil import classpath_conf, registered_session
from test_protobuf import WIRE_CASES

SPARK_PROTOBUF = os.environ.get("PUBSUB_GO_SPARK_PROTOBUF", "")

pytestmark = pytest.mark.skipif(
    not SPARK_PROTOBUF,
    reason="Spark's from_protobuf needs spark-protobuf: set PUBSUB_GO_SPARK_PROTOBUF to its Maven coordinates "
           "or to jars built by bench/tools/build_spark_protobuf.sh")


@pytest.fixture(scope="module")
def spark():
    yield from registered_session(app="protobuf-vs-spark", spark__sql__session__timeZone="UTC",
                                  **classpath_conf(SPARK_PROTOBUF))


def payloads() -> list[bytes]:
    return [m.SerializeToString() for m in events(24)] + WIRE_CASES + [Event().SerializeToString()]


def test_rows_equal_spark_from_protobuf(spark):
    from pyspark.sql.protobuf.functions import from_protobuf

    data = payloads()
    ours = pubsub_go.decode(pa.array(data, pa.binary()), format="protobuf", protobuf_descriptor_set=DESCRIPTOR_SET,
                            protobuf_message="pgtest.Event")
    assert ours.column("__decode_error").null_count == len(data)
    df = spark.createDataFrame([(i, p) for i, p in enumerate(data)], "i INT, payload BINARY")
    theirs = (df.select("i", from_protobuf("payload", "pgtest.Event", binaryDescriptorSet=descriptor_set_with_imports())
                        .alias("r")).orderBy("i").select("r.*"))
    got = [normalize({k: v for k, v in r.items() if k != "__decode_error"}) for r in ours.to_pylist()]
    want = [spark_row(r) for r in theirs.collect()]
    assert len(got) == len(want) == len(data)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, (i, data[i].hex())
    # Protobuf's JSON encoding of the same messages (what a Pub/Sub schema in
    # JSON encoding carries) decodes to Spark's row of their binary form.
    json_payloads = [json_format.MessageToJson(Event.FromString(p)).encode() for p in data]
    ours_json = pubsub_go.decode(pa.array(json_payloads, pa.binary()), format="protobuf", protobuf_encoding="json",
                                 protobuf_descriptor_set=DESCRIPTOR_SET, protobuf_message="pgtest.Event")
    assert ours_json.column("__decode_error").null_count == len(data)
    for i, r in enumerate(ours_json.to_pylist()):
        assert normalize({k: v for k, v in r.items() if k != "__decode_error"}) == want[i], (i, json_payloads[i])
    # The same columns in the same order, of the types Spark gives them
    # (nullability aside: Spark's from_protobuf marks every field nullable).
    from pyspark.sql.pandas.types import to_arrow_schema
    spark_types = {f.name: f.type for f in to_arrow_schema(theirs.schema, timezone="UTC")}
    ours_types = {f.name: f.type for f in ours.schema if f.name != "__decode_error"}
    assert list(ours_types) == list(spark_types)
    for name, t in spark_types.items():
        assert shape(ours_types[name]) == shape(t), (name, ours_types[name], t)


def shape(t: pa.DataType) -> str:
    """An Arrow type without its list/map items' names and nullability."""
    if pa.types.is_map(t):
        return f"map<{shape(t.key_type)}, {shape(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{shape(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {shape(f.type)}" for f in t) + ">"
    return str(t)


def test_malformed_bytes_are_errors_in_both(spark):
    from pyspark.sql.protobuf.functions import from_protobuf

    bad = b"\x12\xff"
    ours = pubsub_go.decode(pa.array([bad], pa.binary()), format="protobuf", protobuf_descriptor_set=DESCRIPTOR_SET,
                            protobuf_message="pgtest.Event").to_pylist()[0]
    assert "malformed protobuf" in ours["__decode_error"]
    df = spark.createDataFrame([(bad,)], "payload BINARY")
    row = df.select(from_protobuf("payload", "pgtest.Event", options={"mode": "PERMISSIVE"},
                                  binaryDescriptorSet=descriptor_set_with_imports()).alias("r")).first()
    assert row["r"] is None
