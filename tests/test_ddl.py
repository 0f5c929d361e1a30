"""pubsub_go.decode(schema=<DDL text>), as from_json takes a schema: read
by Spark's own parser when a SparkContext is active, else by
pubsub_go/ddl.py (a mapInArrow worker, a plain Python process); the two
agree on every form below.

The own parser's tests run in a child process with no SparkContext (what a
mapInArrow worker is): in this one, an earlier test's session may still be
alive, and parse_ddl would take Spark's parser instead."""

from __future__ import annotations

import json
import subprocess
import sys

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


_WITHOUT_A_SESSION = r"""
import json, sys

import pyarrow as pa
from pyspark import SparkContext

import pubsub_go
from pubsub_go.ddl import parse_ddl
from pubsub_go.errors import InvalidArgumentError

assert SparkContext._active_spark_context is None
forms, bad = json.load(sys.stdin)
out = {"forms": {t: parse_ddl(t).json() for t in forms}, "bad": {}}
for t in bad:
    try:
        pubsub_go.decode(pa.array([b"{}"]), format="json", schema=t)
        out["bad"][t] = None
    except InvalidArgumentError as e:
        out["bad"][t] = str(e)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def without_a_session() -> dict:
    """parse_ddl's schema (as Spark's JSON) for each of FORMS, and decode's
    error for each of BAD, in a process with no SparkContext."""
    r = subprocess.run([sys.executable, "-c", _WITHOUT_A_SESSION], input=json.dumps([FORMS, [t for t, _ in BAD]]),
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


@pytest.mark.parametrize("text", FORMS)
def test_without_a_session_the_own_parser_reads_spark_ddl(text, without_a_session):
    from pyspark.sql.types import _parse_datatype_json_string

    got = _parse_datatype_json_string(without_a_session["forms"][text])
    assert got == _own(text)
    assert got.fields


def test_decode_takes_ddl_text_without_a_session():
    payloads = pa.array([b'{"id": 1, "tags": ["a", "b"]}', b'{"id": 2}'])
    batch = pubsub_go.decode(payloads, format="json", schema="id BIGINT, tags ARRAY<STRING>", on_error="fail")
    assert batch.schema == pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))])
    assert batch.column("id").to_pylist() == [1, 2] and batch.column("tags").to_pylist() == [["a", "b"], None]


@pytest.mark.parametrize("text,expected", BAD)
def test_malformed_ddl_names_the_problem_and_the_forms(text, expected, without_a_session):
    message = without_a_session["bad"][text]
    assert message is not None, f"{text!r} was taken"
    assert expected in message and "ARRAY<STRING>" in message, message


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
