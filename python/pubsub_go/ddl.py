"""A schema given as DDL text, as Spark's ``from_json`` takes it:
``"id BIGINT, tags ARRAY<STRING>, meta STRUCT<k: STRING, v: INT>"``.

With an active SparkContext, Spark's own parser reads it (exactly Spark's
grammar). Without one (``pubsub_go.decode`` in a plain Python process, or
in a ``mapInArrow`` worker, where no session runs), this module's parser
reads the data types Spark's DDL names, into pyspark's types:
``pyspark.sql.types._parse_datatype_string`` needs a running session.
tests/test_ddl.py checks the two agree."""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidArgumentError

# Spark's type names (and its aliases) -> pyspark.sql.types class name.
_PRIMITIVES = {
    "boolean": "BooleanType", "tinyint": "ByteType", "byte": "ByteType", "smallint": "ShortType",
    "short": "ShortType", "int": "IntegerType", "integer": "IntegerType", "bigint": "LongType",
    "long": "LongType", "float": "FloatType", "real": "FloatType", "double": "DoubleType",
    "string": "StringType", "binary": "BinaryType", "date": "DateType", "timestamp": "TimestampType",
    "timestamp_ltz": "TimestampType", "timestamp_ntz": "TimestampNTZType", "void": "NullType",
}
_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|('(?:[^'\\]|\\.)*')|(.))")
FORMS = ('"name TYPE, ..." with Spark SQL types, e.g. "id BIGINT, tags ARRAY<STRING>, '
         'm MAP<STRING, DOUBLE>, s STRUCT<a: INT, b: STRING>, d DECIMAL(10, 2)"')


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []  # (kind, value, position)
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                break
            if m.lastindex is None:  # trailing whitespace
                break
            kind = ("quoted", "word", "number", "string", "punct")[m.lastindex - 1]
            self.tokens.append((kind, m.group(m.lastindex), m.start(m.lastindex)))
            pos = m.end()
        self.i = 0

    def fail(self, what: str) -> InvalidArgumentError:
        pos = self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)
        return InvalidArgumentError.new(f"schema {self.text!r}: {what} at character {pos}; expected {FORMS}")

    def peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise self.fail(f"expected {value!r}" if value else "unexpected end")
        kind, v, _ = self.tokens[self.i]
        if value is not None and v.lower() != value:
            raise self.fail(f"expected {value!r}, found {v!r}")
        self.i += 1
        return kind, v

    def name(self) -> str:
        kind, v = self.take()
        if kind == "quoted":
            return v[1:-1].replace("``", "`")
        if kind != "word":
            raise self.fail(f"expected a field name, found {v!r}")
        return v

    def fields(self, types: Any, end: str | None) -> Any:
        out = []
        while True:
            name = self.name()
            if self.peek() == ":":
                self.take(":")
            dtype = self.dtype(types)
            nullable = True
            if (self.peek() or "").lower() == "not":
                self.take("not")
                self.take("null")
                nullable = False
            metadata = {}
            if (self.peek() or "").lower() == "comment":
                self.take("comment")
                kind, v = self.take()
                if kind != "string":
                    raise self.fail("expected a quoted comment")
                metadata = {"comment": v[1:-1]}
            out.append(types.StructField(name, dtype, nullable, metadata or None))
            if self.peek() != ",":
                break
            self.take(",")
        if end is not None:
            self.take(end)
        return types.StructType(out)

    def number(self) -> int:
        kind, v = self.take()
        if kind != "number":
            raise self.fail(f"expected a number, found {v!r}")
        return int(v)

    def dtype(self, types: Any) -> Any:
        kind, v = self.take()
        word = v.lower()
        if kind != "word":
            raise self.fail(f"expected a type, found {v!r}")
        if word in _PRIMITIVES:
            return getattr(types, _PRIMITIVES[word])()
        if word in ("decimal", "dec", "numeric"):
            if self.peek() != "(":
                return types.DecimalType(10, 0)
            self.take("(")
            precision, scale = self.number(), 0
            if self.peek() == ",":
                self.take(",")
                scale = self.number()
            self.take(")")
            return types.DecimalType(precision, scale)
        if word in ("char", "varchar"):
            self.take("(")
            n = self.number()
            self.take(")")
            return (types.CharType if word == "char" else types.VarcharType)(n)
        if word == "array":
            self.take("<")
            element = self.dtype(types)
            self.take(">")
            return types.ArrayType(element, True)
        if word == "map":
            self.take("<")
            key = self.dtype(types)
            self.take(",")
            value = self.dtype(types)
            self.take(">")
            return types.MapType(key, value, True)
        if word == "struct":
            self.take("<")
            if self.peek() == ">":
                self.take(">")
                return types.StructType([])
            return self.fields(types, ">")
        self.i -= 1
        raise self.fail(f"unknown type {v!r}")


def parse_ddl(text: str) -> Any:
    """A pyspark StructType from DDL text (see the module's docstring)."""
    try:
        from pyspark.sql import types
    except ImportError:
        raise InvalidArgumentError.new("a schema given as DDL text needs pyspark installed; without it give "
                                       "a pyarrow.Schema") from None
    from pyspark import SparkContext

    if not text.strip():  # Spark reads it as no columns: always a mistake here
        raise InvalidArgumentError.new(f"schema {text!r}: empty schema; expected {FORMS}")
    if SparkContext._active_spark_context is not None:
        try:
            dtype = types._parse_datatype_string(text)
        except Exception as e:  # Spark's ParseException, with its own pointer into the text
            raise InvalidArgumentError.new(f"schema {text!r} is not valid DDL: {e}; expected {FORMS}") from None
        if not isinstance(dtype, types.StructType):
            raise InvalidArgumentError.new(f"schema {text!r} is a {dtype.simpleString()}, not a list of "
                                           f"fields; expected {FORMS}")
        return dtype
    p = _Parser(text)
    if not p.tokens:
        raise p.fail("empty schema")
    if (p.peek() or "").lower() == "struct" and len(p.tokens) > 1 and p.tokens[1][1] == "<":
        schema = p.dtype(types)
    else:
        schema = p.fields(types, None)
    if p.i != len(p.tokens):
        raise p.fail(f"unexpected {p.peek()!r}")
    return schema
