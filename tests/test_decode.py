"""pubsub_go.decode: the native decoder API (built-ins natively in Go, user
modules in the Go host's sandbox). Compared with Spark's own from_json /
from_avro on the same bytes, inside mapInArrow as docs/decode.md shows;
hostile modules are stopped within their limits and the process carries on."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest

import pubsub_go
from guests import build_guest
from pubsub_go.errors import AbortedError, DeadlineExceededError, InvalidArgumentError, ResourceExhaustedError
from sparkutil import spark_session, stop_spark
from test_schema_mode import AVRO_SCHEMA, JSON_DDL, avro_payloads, json_payloads

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hostile_wasm(tmp_path_factory) -> Path:
    return build_guest("internal/testguests/hostile", tmp_path_factory.mktemp("hostile"))


# --- without Spark ----------------------------------------------------------

SCHEMA = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))])


def test_rows_errors_and_on_error_modes():
    payloads = pa.array([b'{"id": 1, "tags": ["a"]}', b"{oops", None, b'{"id": 2}'])
    batch = pubsub_go.decode(payloads, format="json", schema=SCHEMA)
    assert batch.schema.names == ["id", "tags", "__decode_error"]
    assert batch.column("id").to_pylist() == [1, None, None, 2]
    errs = batch.column("__decode_error").to_pylist()
    assert errs[0] is None and errs[2] is None and errs[3] is None and "offset" in errs[1]
    nulls = pubsub_go.decode(payloads, format="json", schema=SCHEMA, on_error="null")
    assert nulls.schema == SCHEMA and nulls.column("tags").to_pylist() == [["a"], None, None, None]
    with pytest.raises(InvalidArgumentError, match=r"1 payload\(s\) failed to decode: row 1: "):
        pubsub_go.decode(payloads, format="json", schema=SCHEMA, on_error="fail")


def test_on_error_raise_is_the_former_spelling_of_fail():
    """on_error="raise" (decode()'s first word for what onDecodeError calls
    "fail") still fails the same way, with a DeprecationWarning naming the new word."""
    payloads = pa.array([b'{"id": 1}', b"{oops"])
    with pytest.warns(DeprecationWarning, match="on_error='fail'"):
        with pytest.raises(InvalidArgumentError, match=r"1 payload\(s\) failed to decode: row 1: "):
            pubsub_go.decode(payloads, format="json", schema=SCHEMA, on_error="raise")
    with pytest.raises(InvalidArgumentError, match="on_error='stop'; expected one of column, null, fail"):
        pubsub_go.decode(payloads, format="json", schema=SCHEMA, on_error="stop")


@pytest.mark.parametrize("typ", [pa.binary(), pa.large_binary(), pa.string(), pa.large_string()])
def test_payload_array_types(typ):
    payloads = pa.chunked_array([pa.array(['{"id": 5}', None], typ), pa.array(['{"id": 6}'], typ)])
    batch = pubsub_go.decode(payloads, format="json", schema=SCHEMA, on_error="fail")
    assert batch.column("id").to_pylist() == [5, None, 6]


def test_each_call_gets_the_decoder_of_its_own_arguments(tmp_path, monkeypatch, hostile_wasm):
    """decode() finds an open decoder by its arguments: a call whose schema,
    options or module differ in any way (pyarrow schemas equal but for
    metadata, a relative module path from another directory) gets its own."""
    from pubsub_go import decode_api

    payloads = pa.array([b'{"id": 7}'])
    as_long = pubsub_go.decode(payloads, format="json", schema="id BIGINT")
    as_text = pubsub_go.decode(payloads, format="json", schema="id STRING")
    assert as_long.column("id").to_pylist() == [7] and as_text.column("id").to_pylist() == ["7"]
    assert pubsub_go.decode(payloads, format="json", schema="id BIGINT").column("id").type == pa.int64()
    plain = pa.schema([("id", pa.int64())])
    tagged = plain.with_metadata({"k": "v"})
    assert plain == tagged  # pyarrow's == ignores metadata; the decoders' configs do not
    pubsub_go.decode(payloads, format="json", schema=plain)
    before = len(decode_api._cache)
    pubsub_go.decode(payloads, format="json", schema=tagged)
    assert len(decode_api._cache) == before + 1 <= decode_api._CACHE_SIZE
    # Back to back, differing only in an option's value; and the same call
    # again once its decoder was evicted from the cache (and closed).
    ts = pa.array([b'{"t": "2024-01-01T00:00:00"}'])
    utc = pubsub_go.decode(ts, format="json", schema="t TIMESTAMP", timezone="UTC").column("t")
    plus1 = pubsub_go.decode(ts, format="json", schema="t TIMESTAMP", timezone="+01:00").column("t")
    assert utc[0].value - plus1[0].value == 3600 * 10**6, (utc, plus1)
    for i in range(decode_api._CACHE_SIZE):
        pubsub_go.decode(payloads, format="json", schema=f"id BIGINT, x{i} INT")
    assert pubsub_go.decode(ts, format="json", schema="t TIMESTAMP", timezone="+01:00").column("t") == plus1
    decode_api._last[-1].close()  # the decoder the same call found last time, closed since
    assert pubsub_go.decode(ts, format="json", schema="t TIMESTAMP", timezone="+01:00").column("t") == plus1
    # A StructType changed in place between two calls is a new schema.
    from pyspark.sql.types import LongType, StructType

    st = StructType().add("id", LongType())
    assert pubsub_go.decode(payloads, format="json", schema=st).column_names == ["id", "__decode_error"]
    st.add("x", LongType())
    assert pubsub_go.decode(payloads, format="json", schema=st).column_names == ["id", "x", "__decode_error"]
    # The same relative path names another module from another directory.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "m.wasm").write_bytes(hostile_wasm.read_bytes())
    (tmp_path / "b" / "m.wasm").write_bytes(b"not a module")
    monkeypatch.chdir(tmp_path / "a")
    assert pubsub_go.decode(pa.array([b"ok"]), decoder="m.wasm").num_rows == 1
    monkeypatch.chdir(tmp_path / "b")
    with pytest.raises(Exception, match=str(tmp_path / "b" / "m.wasm")):
        pubsub_go.decode(pa.array([b"ok"]), decoder="m.wasm")


def test_later_batches_keep_the_first_batchs_schema_with_its_metadata():
    """A decoder's first batch comes with its schema; later ones come
    without (pg_decoder_decode's out_schema NULL) and are imported with the
    schema kept from the first. Both must be the library's, metadata and
    nullability included, and the data must not depend on which it was."""
    from pubsub_go import decode_api

    tagged = SCHEMA.with_metadata({"k": "v"})
    payloads = pa.array([b'{"id": 1, "tags": ["a", "b"]}', b"{oops", b'{"id": 3}'])
    dec = decode_api._decoder_for("json", tagged, None, {}, decode_api.DEFAULT_TIMEOUT_MS,
                                  decode_api.DEFAULT_MEMORY_LIMIT_MB, "auto")
    dec._batch_schema = None  # as opened: the next batch brings its schema
    first = dec.decode(payloads)
    assert dec._batch_schema is not None
    later = [dec.decode(payloads) for _ in range(3)]
    dec._batch_schema = None
    fresh = dec.decode(payloads)
    for b in later:
        assert b.schema.equals(fresh.schema, check_metadata=True), (b.schema, fresh.schema)
        assert b.equals(first)
    assert fresh.schema.metadata == {b"k": b"v"}
    assert fresh.schema.field("__decode_error").nullable and fresh.schema.field("__decode_error").type == pa.utf8()
    assert later[0].column("id").to_pylist() == [1, None, 3]


def test_avro_schema_is_derived():
    avro = {"type": "record", "name": "E", "fields": [{"name": "n", "type": "long"},
                                                      {"name": "s", "type": ["null", "string"]}]}
    batch = pubsub_go.decode(pa.array([b"\x04\x02\x02x", b"\x01"]), format="avro", avro_schema=avro)
    assert batch.schema.field("n").type == pa.int64() and batch.schema.field("s").type == pa.string()
    assert batch.column("n").to_pylist() == [2, None] and batch.column("s").to_pylist() == ["x", None]
    assert "__decode_error" in batch.schema.names and batch.column("__decode_error")[1].is_valid


def test_bad_arguments_are_named():
    with pytest.raises(InvalidArgumentError, match="exactly one of format"):
        pubsub_go.decode(pa.array([b""]), format="json", decoder="/x.wasm")
    with pytest.raises(InvalidArgumentError, match="format='xml' is not a built-in decoder"):
        pubsub_go.decode(pa.array([b""]), format="xml")
    with pytest.raises(InvalidArgumentError, match="target schema"):
        pubsub_go.decode(pa.array([b""]), format="json")  # JSON needs a schema
    with pytest.raises(InvalidArgumentError, match="unknown option"):
        pubsub_go.decode(pa.array([b""]), format="json", schema=SCHEMA, nope="1")
    with pytest.raises(InvalidArgumentError, match="decoder.wasm .*not a readable file"):
        pubsub_go.decode(pa.array([b""]), decoder="/nonexistent/d.wasm")
    with pytest.raises(InvalidArgumentError, match="payloads must be a binary"):
        pubsub_go.decode(pa.array([1, 2]), format="json", schema=SCHEMA)


def test_bad_format_names_the_builtins_from_the_contract():
    from pubsub_go import contract

    with pytest.raises(InvalidArgumentError) as e:
        pubsub_go.decode(pa.array([b""]), format="xml")
    assert all(f in str(e.value) for f in contract.builtin_formats()), str(e.value)


def test_public_decode_stays_the_function_when_its_module_is_imported():
    """The public function lives in decode_api.py, not decode.py: importing
    a submodule named decode would make pubsub_go.decode that module."""
    import pubsub_go.decode_api

    assert pubsub_go.decode is pubsub_go.decode_api.decode and callable(pubsub_go.decode)


def test_old_wasmtime_host_path_is_deprecated_but_works():
    import importlib
    import sys

    import pubsub_go.wasm_authoring as tool
    from pubsub_go import contract

    sys.modules.pop("pubsub_go.decoders", None)
    with pytest.warns(DeprecationWarning, match="pubsub_go.wasm_authoring"):
        old = importlib.import_module("pubsub_go.decoders")
    assert old.Decoder is tool.Decoder and old.DecoderError is tool.DecoderError
    assert tool.BUILTINS == tuple(contract.builtin_formats())


def test_hostile_modules_are_stopped_and_the_process_carries_on(hostile_wasm):
    """On wazero, the fallback (wasmtime, the default where installed:
    test_wasmtime_engine.py)."""
    dec = str(hostile_wasm)
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="exceeded its time limit.*timeout_ms=500"):
        pubsub_go.decode(pa.array([b"loop"]), decoder=dec, timeout_ms=500, engine="wazero")
    assert time.monotonic() - start < 10
    with pytest.raises(ResourceExhaustedError, match="memory limit of 48 MiB"):
        pubsub_go.decode(pa.array([b"alloc"]), decoder=dec, memory_limit_mb=48, timeout_ms=30_000, engine="wazero")
    with pytest.raises(AbortedError, match="crashed"):
        pubsub_go.decode(pa.array([b"exit"]), decoder=dec, engine="wazero")
    # A panic in the guest is that row's error; opening a file fails inside the sandbox.
    batch = pubsub_go.decode(pa.array([b"panic", b"probe", b"ok"]), decoder=dec, engine="wazero")
    assert "boom" in batch.column("__decode_error")[0].as_py()
    assert batch.column("v").to_pylist()[1:] == ["env=0 args=0 file=true dir=true", "ok"]


# --- against Spark ------------------------------------------------------------


@pytest.fixture(scope="module")
def spark():
    stop_spark()
    s = spark_session(master="local[2]", app="decode", spark__sql__session__timeZone="UTC")
    yield s
    s.stop()


def decode_in_spark(df, schema, **kwargs):
    """The docs/decode.md pattern: decode the payload column in mapInArrow."""
    from pyspark.sql.types import LongType, StructField, StructType

    out_schema = StructType([*schema.fields, StructField("i", LongType())])

    def decode_batches(batches):
        import pubsub_go

        for b in batches:
            decoded = pubsub_go.decode(b.column("payload"), schema=schema, on_error="null", **kwargs)
            yield decoded.append_column("i", b.column("i"))

    return {r.i: r.asDict(recursive=True) for r in df.mapInArrow(decode_batches, out_schema).collect()}


def spark_rows(df, expr):
    return {r.i: r.ref.asDict(recursive=True) if r.ref is not None else None
            for r in df.selectExpr("i", f"{expr} AS ref").collect()}


def assert_same(mine: dict, ref: dict, fields: list[str]):
    assert sorted(mine) == sorted(ref)
    bad = []
    for i, want in ref.items():
        got = {f: mine[i][f] for f in fields}
        if want is None:
            want = dict.fromkeys(fields)  # a null payload: a null struct in Spark, null columns here
        if got != want:
            bad.append((i, got, want))
    assert not bad, f"{len(bad)} rows differ from Spark, e.g. {bad[:2]}"


def test_json_equals_spark_from_json(spark):
    # Nested structs, arrays of structs, maps, timestamps (zones, epoch
    # seconds), dates, decimals (numbers and strings), nulls; and a null payload.
    payloads = [*json_payloads(80), None]
    df = spark.createDataFrame(list(enumerate(payloads)), "i LONG, payload BINARY").repartition(2)
    schema = spark.createDataFrame([], JSON_DDL).schema
    mine = decode_in_spark(df, schema, format="json")
    ref = spark_rows(df, f"from_json(CAST(payload AS STRING), '{JSON_DDL}')")
    assert_same(mine, ref, schema.names)
    assert any(r["customer"] and r["customer"]["address"] for r in mine.values())


def test_avro_equals_spark_from_avro(spark):
    from pyspark.sql.types import StructField, StructType

    payloads = avro_payloads(spark, 60)
    df = spark.createDataFrame(list(enumerate(payloads)), "i LONG, payload BINARY").repartition(2)
    expr = f"from_avro(payload, '{json.dumps(AVRO_SCHEMA)}')"
    derived = spark.createDataFrame([(b"",)], "payload BINARY").selectExpr(f"{expr} AS r").schema[0].dataType
    schema = StructType([StructField(f.name, f.dataType, True) for f in derived.fields])
    mine = decode_in_spark(df, schema, format="avro", avro_schema=AVRO_SCHEMA)
    ref = spark_rows(df, expr)
    assert_same(mine, ref, schema.names)
