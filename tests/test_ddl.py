"""pubsub_go.decode(schema=<DDL text>), as from_json takes a schema: read
by Spark's own parser when a SparkContext is active, else by
pubsub_go/ddl.py (a mapInArrow worker, a plain Python process); the two
agree on every form below."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pubsub_go
from pubsub_go.ddl import _Parser, parse_ddl
from pubsub_go.errors import InvalidArgumentError

FORMS = [
    "id BIGINT, tags ARRAY<STRING>",
    "a: int, b: string",
    "a TINYINT, b SMALLINT, c INT, d BIGINT, e FLOAT, f DOUBLE, g BOOLEAN, h BINARY, i DATE",
    "t TIMESTAMP, n TIMESTAMP_NTZ, l TIMESTAMP_LTZ",
    "d DECIMAL(10, 2), e DECIMAL, f DEC(5), g NUMERIC(38,18)",
    "m MAP<STRING, ARRAY<DOUBLE>>, s STRUCT<a: INT, b STRING, c STRUCT<x: LONG>>",
    "`weird name` STRING, `back``tick` INT",
    "a INT NOT NULL, b STRING COMMENT 'the b'",
    "c CHAR(3), v VARCHAR(20)",
    "struct<a: int, b: array<map<string, int>>>",
    "A Int, B sTrInG",
]
BAD = [("id BIGINT,", "unexpected end"), ("id BIGNUM", "unknown type 'BIGNUM'"),
       ("tags ARRAY<STRING", "expected '>'"), ("", "empty schema"), ("m MAP<STRING>", "expected ','")]


def _own(text: str):
    from pyspark.sql import types

    p = _Parser(text)
    return p.dtype(types) if text.lower().startswith("struct<") else p.fields(types, None)


@pytest.mark.parametrize("text", FORMS)
def test_without_a_session_the_own_parser_reads_spark_ddl(text):
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        pytest.skip("a session is active in this process: parse_ddl takes Spark's parser")
    assert parse_ddl(text) == _own(text)
    assert parse_ddl(text).fields


def test_decode_takes_ddl_text_without_a_session():
    payloads = pa.array([b'{"id": 1, "tags": ["a", "b"]}', b'{"id": 2}'])
    batch = pubsub_go.decode(payloads, format="json", schema="id BIGINT, tags ARRAY<STRING>", on_error="raise")
    assert batch.schema == pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))])
    assert batch.column("id").to_pylist() == [1, 2] and batch.column("tags").to_pylist() == [["a", "b"], None]


@pytest.mark.parametrize("text,expected", BAD)
def test_malformed_ddl_names_the_problem_and_the_forms(text, expected):
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        pytest.skip("a session is active in this process: Spark's parser reports it")
    with pytest.raises(InvalidArgumentError) as e:
        pubsub_go.decode(pa.array([b"{}"]), format="json", schema=text)
    assert expected in str(e.value) and "ARRAY<STRING>" in str(e.value), str(e.value)


def test_a_schema_of_another_kind_is_refused():
    with pytest.raises(InvalidArgumentError, match="pyarrow.Schema, a pyspark StructType or DDL text, got int"):
        pubsub_go.decode(pa.array([b"{}"]), format="json", schema=5)


@pytest.mark.spark
def test_own_parser_agrees_with_sparks():
    """Spark's parser (a session is needed for it) and ours, on every form."""
    from pyspark.sql.types import _parse_datatype_string

    from sparkutil import spark_session

    spark_session(master="local[1]")
    for text in FORMS:
        assert _own(text) == _parse_datatype_string(text), text
    for text, _ in BAD:
        with pytest.raises(InvalidArgumentError):
            parse_ddl(text)  # Spark's parser now, wrapped in our error
