"""Writes the decoder conformance vectors in testdata/decoders/vectors/, which
the Go tests (go/internal/decode) and the Python tests (tests/decoders) read.

Each vector is JSON: format, schema (or null with expected_schema: derived
by the decoder), options, payloads (text) or payloads_hex (bytes),
expected rows and expected per-row errors (null or a substring of the
message). Expected values are written here by hand from the Spark / Avro
rules, never produced by the decoders. Avro payloads are encoded with
fastavro (pip install '.[vectors]') as an independent implementation.

Canonical values: ints, bools and strings as JSON; floats as numbers or
"NaN"/"Infinity"/"-Infinity"; binary as hex; decimals as strings with
exactly `scale` fraction digits; dates as "YYYY-MM-DD"; timestamps as the
integer in the column's unit; lists as arrays; maps as [key, value] pairs;
structs as objects. Schema types: "int8".."int64", "float32", "float64",
"bool", "string", "binary", "date32", "null", "decimal(p,s)",
"timestamp[unit]" or "timestamp[unit,tz]", {"list": T} (nullable "item";
or {"list": T, "item": "element", "item_nullable": false}), {"map": [K, V]}
(optionally "value_nullable": false), {"struct": [fields]}; a field is
{"name", "type", "nullable" (default true)}.

Run: python3 testdata/decoders/make_vectors.py
"""

import io
import json
from datetime import date, datetime, timezone
from pathlib import Path

OUT = Path(__file__).resolve().parent / "vectors"


def us(s: str) -> int:
    """Microseconds since the epoch of an ISO date-time (UTC if naive)."""
    d = datetime.fromisoformat(s)
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    delta = d - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def F(name, typ, nullable=True):
    return {"name": name, "type": typ, "nullable": nullable}


def null_row(schema):
    return {f["name"]: None for f in schema}


def write(name, vec):
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(vec, indent=1, ensure_ascii=False) + "\n")


def json_vectors():
    scalars = [
        F("i8", "int8"),
        F("i16", "int16"),
        F("i32", "int32"),
        F("i64", "int64"),
        F("f32", "float32"),
        F("f64", "float64"),
        F("b", "bool"),
        F("s", "string"),
        F("bin", "binary"),
        F("d", "date32"),
        F("dec", "decimal(10,2)"),
        F("ts", "timestamp[us,UTC]"),
    ]
    rows, payloads = [], []

    def add(payload, **vals):
        payloads.append(payload)
        r = null_row(scalars)
        r.update(vals)
        rows.append(r)

    add(
        '{"i8": -128, "i16": 32767, "i32": -2147483648, "i64": 9223372036854775807,'
        ' "f32": 1.5, "f64": -2.25e-3,'
        ' "b": true, "s": "héllo \\"q\\" \\u00e9\\ud83d\\ude00", "bin": "aGVsbG8=", "d": "2024-02-29",'
        ' "dec": 12.345, "ts": "2024-01-02T03:04:05Z"}',
        i8=-128,
        i16=32767,
        i32=-2147483648,
        i64=9223372036854775807,
        f32=1.5,
        f64=-0.00225,
        b=True,
        s='héllo "q" é😀',
        bin="68656c6c6f",
        d="2024-02-29",
        dec="12.35",
        ts=us("2024-01-02T03:04:05+00:00"),
    )
    # Missing, null and unknown members; whitespace everywhere.
    add(' { "i32" : 7 , "unknown": {"deep": [1, {"x": null}]}, "s": null, "b": false } ', i32=7, b=False)
    # A repeated member: the last one wins.
    add('{"i64": 1, "i64": 2, "s": "a", "s": "b"}', i64=2, s="b")
    # Single-quoted strings (Spark allows them by default).
    add("{'s': 'it''s', 'i16': 5}".replace("it''s", "it\\'s"), s="it's", i16=5)
    # Non-string values in a string column keep their JSON text (Jackson).
    add('{"s": {"a": [1, 2.50, "x\\n", true, null], "b": {}}}', s='{"a":[1,2.5,"x\\n",true,null],"b":{}}')
    add('{"s": 12}', s="12")
    add('{"s": 1e7}', s="1.0E7")
    add('{"s": 0.001}', s="0.001")
    add('{"s": false}', s="false")
    # Floats: integers, exponents, non-numeric numbers, quoted specials.
    add('{"f32": 3, "f64": 1E+2}', f32=3.0, f64=100.0)
    add('{"f32": NaN, "f64": -Infinity}', f32="NaN", f64="-Infinity")
    add('{"f32": "Infinity", "f64": "NaN"}', f32="Infinity", f64="NaN")
    add('{"f64": "-INF"}', f64="-Infinity")
    # Decimals: half-up rounding, strings (commas dropped), exponents.
    add('{"dec": -0.005}', dec="-0.01")
    add('{"dec": "1,234.5"}', dec="1234.50")
    add('{"dec": 1e2}', dec="100.00")
    add('{"dec": 99999999.994}', dec="99999999.99")
    # Dates: the yyyy-MM-dd formatter and Spark's fallback forms.
    add('{"d": "2024-3-1"}', d="2024-03-01")
    add('{"d": "2024-03-01T10:00:00"}', d="2024-03-01")
    add('{"d": "1969-12-31"}', d="1969-12-31")
    # Timestamps: fractions, offsets, a space separator, epoch seconds.
    add('{"ts": "2024-01-02T03:04:05.123+01:00"}', ts=us("2024-01-02T03:04:05.123+01:00"))
    add('{"ts": "2024-01-02 03:04:05.123456"}', ts=us("2024-01-02T03:04:05.123456"))
    add('{"ts": "2024-01-02T03:04"}', ts=us("2024-01-02T03:04:00"))
    add('{"ts": 1700000000}', ts=1700000000 * 1_000_000)
    add('{"ts": "1960-06-01T00:00:00-05:00"}', ts=us("1960-06-01T00:00:00-05:00"))
    add('{"bin": ""}', bin="")
    write(
        "json_scalars",
        {
            "description": "JSON scalars: Spark from_json semantics for valid records",
            "format": "json",
            "schema": scalars,
            "options": {},
            "payloads": payloads,
            "expected": rows,
            "errors": [None] * len(rows),
        },
    )

    nested = [
        F("id", "int64", False),
        F(
            "user",
            {
                "struct": [
                    F("name", "string"),
                    F("address", {"struct": [F("city", "string"), F("zip", "int32")]}),
                ]
            },
        ),
        F("items", {"list": {"struct": [F("sku", "string"), F("qty", "int32"), F("price", "decimal(8,3)")]}}),
        F("attrs", {"map": ["string", {"list": "int64"}]}),
        F("matrix", {"list": {"list": "float64"}}),
        F("seen", {"list": "timestamp[ms,UTC]"}),
    ]
    rows, payloads = [], []

    def addn(payload, **vals):
        payloads.append(payload)
        r = null_row(nested)
        r.update(vals)
        rows.append(r)

    addn(
        '{"id": 1, "user": {"name": "ann", "address": {"city": "Oslo", "zip": 150}},'
        ' "items": [{"sku": "a", "qty": 2, "price": 1.5}, {"sku": "b", "qty": null}],'
        ' "attrs": {"x": [1, 2], "y": [], "z": null}, "matrix": [[1, 2.5], [], null, [null]],'
        ' "seen": ["2024-01-01T00:00:00.123Z", null]}',
        id=1,
        user={"name": "ann", "address": {"city": "Oslo", "zip": 150}},
        items=[{"sku": "a", "qty": 2, "price": "1.500"}, {"sku": "b", "qty": None, "price": None}],
        attrs=[["x", [1, 2]], ["y", []], ["z", None]],
        matrix=[[1.0, 2.5], [], None, [None]],
        seen=[us("2024-01-01T00:00:00.123+00:00") // 1000, None],
    )
    addn('{"id": 2, "user": null, "items": [], "attrs": {}}', id=2, items=[], attrs=[])
    addn(
        '{"id": 3, "user": {"address": {}}, "attrs": {"k": [5], "k": [6]}}',
        id=3,
        user={"name": None, "address": {"city": None, "zip": None}},
        attrs=[["k", [5]], ["k", [6]]],
    )
    addn('{"user": {"name": "dup", "name": "last"}, "id": 4}', id=4, user={"name": "last", "address": None})
    write(
        "json_nested",
        {
            "description": "JSON nested structs, lists, maps",
            "format": "json",
            "schema": nested,
            "options": {},
            "payloads": payloads,
            "expected": rows,
            "errors": [None] * len(rows),
        },
    )

    schema = [
        F("a", "int32"),
        F("b", "string"),
        F("c", {"list": "int32"}),
        F("d", "date32"),
        F("e", "decimal(4,1)"),
    ]
    cases = [
        ('{"a": 1}', {"a": 1}, None),
        ("not json", None, "expected a JSON object"),
        ('{"a": 1', None, "end of input"),
        ('{"a": 1.5}', None, "a: expected an integer"),
        ('{"a": "1"}', None, "a: expected an integer"),
        ('{"a": 2147483648}', None, "out of range for int32"),
        ('{"c": [1, "x"]}', None, "c[1]: expected an integer"),
        ('{"d": "2024-02-30"}', None, "invalid date"),
        ('{"e": 1234.5}', None, "does not fit decimal(4, 1)"),
        ('[{"a": 1}]', None, "expected a JSON object"),
        ('{"a": 1} {"a": 2}', None, "after the JSON value"),
        ('{"a": 01}', None, "a: expected an integer"),
        ('{"a": 1,}', None, "expected a field name"),
        ('{"b": "\x01"}', None, "unescaped control character"),
        ("null", {}, None),
        ("", {}, None),
        ("   ", {}, None),
        ('{"a": 2}', {"a": 2}, None),
    ]
    rows = []
    for _, vals, _ in cases:
        r = null_row(schema)
        r.update(vals or {})
        rows.append(r)
    write(
        "json_errors",
        {
            "description": "Malformed records: a null row and a per-record error, never a batch failure",
            "format": "json",
            "schema": schema,
            "options": {},
            "payloads": [c[0] for c in cases],
            "expected": rows,
            "errors": [c[2] for c in cases],
        },
    )

    schema = [F("ts", "timestamp[us,UTC]"), F("ntz", "timestamp[us]"), F("sec", "timestamp[s,UTC]")]
    payloads = [
        '{"ts": "2024-06-01T12:00:00", "ntz": "2024-06-01T12:00:00", "sec": "2024-06-01T12:00:00.999"}',
        '{"ts": "2024-06-01T12:00:00Z", "ntz": "2024-06-01 12:00:00.5"}',
    ]
    rows = [
        {
            "ts": us("2024-06-01T12:00:00+02:00"),
            "ntz": us("2024-06-01T12:00:00"),
            "sec": us("2024-06-01T12:00:00+02:00") // 1_000_000,
        },
        {"ts": us("2024-06-01T12:00:00+00:00"), "ntz": us("2024-06-01T12:00:00.5"), "sec": None},
    ]
    write(
        "json_timezone",
        {
            "description": "The timezone option applies to zone-less strings of tz-aware columns",
            "format": "json",
            "schema": schema,
            "options": {"timezone": "+02:00"},
            "payloads": payloads,
            "expected": rows,
            "errors": [None, None],
        },
    )


def avro_vectors():
    import fastavro

    def enc(schema, records):
        parsed = fastavro.parse_schema(schema)
        out = []
        for r in records:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, r)
            out.append(buf.getvalue().hex())
        return out

    import uuid
    from decimal import Decimal

    prim = {
        "type": "record",
        "name": "Prim",
        "namespace": "t",
        "fields": [
            {"name": "b", "type": "boolean"},
            {"name": "i", "type": "int"},
            {"name": "l", "type": "long"},
            {"name": "f", "type": "float"},
            {"name": "d", "type": "double"},
            {"name": "s", "type": "string"},
            {"name": "by", "type": "bytes"},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "tms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "tus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
            {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
            {
                "name": "fdec",
                "type": {
                    "type": "fixed",
                    "name": "F8",
                    "size": 8,
                    "logicalType": "decimal",
                    "precision": 12,
                    "scale": 4,
                },
            },
            {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
            {"name": "fx", "type": {"type": "fixed", "name": "Three", "size": 3}},
            {"name": "skipped", "type": {"type": "array", "items": "string"}},
            {"name": "n", "type": "null"},
        ],
    }
    uid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    recs = [
        {
            "b": True,
            "i": -7,
            "l": 1 << 40,
            "f": 0.5,
            "d": -1.25,
            "s": "héllo",
            "by": b"\x00\xff",
            "day": date(2024, 2, 29),
            "tms": datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc),
            "tus": datetime(1969, 7, 20, 20, 17, 40, 1, tzinfo=timezone.utc),
            "lts": datetime(2024, 1, 2, 3, 4, 5, 6),
            "dec": Decimal("-1234567.89"),
            "fdec": Decimal("12345678.9012"),
            "u": str(uid),
            "color": "BLUE",
            "fx": b"abc",
            "skipped": ["x", "yy"],
            "n": None,
        },
        {
            "b": False,
            "i": 2147483647,
            "l": -(1 << 63),
            "f": float("inf"),
            "d": float("nan"),
            "s": "",
            "by": b"",
            "day": date(1900, 1, 1),
            "tms": datetime(1970, 1, 1, tzinfo=timezone.utc),
            "tus": datetime(2262, 4, 11, tzinfo=timezone.utc),
            "lts": datetime(1970, 1, 1),
            "dec": Decimal("0.00"),
            "fdec": Decimal("-0.0001"),
            "u": str(uid),
            "color": "RED",
            "fx": b"\x00\x01\x02",
            "skipped": [],
            "n": None,
        },
    ]
    target = [
        F("b", "bool", False),
        F("i", "int32", False),
        F("l", "int64", False),
        F("f", "float32", False),
        F("d", "float64", False),
        F("s", "string", False),
        F("by", "binary", False),
        F("day", "date32", False),
        F("tms", "timestamp[us,UTC]", False),
        F("tus", "timestamp[us,UTC]", False),
        F("lts", "timestamp[us]", False),
        F("dec", "decimal(9,2)", False),
        F("fdec", "decimal(12,4)", False),
        F("u", "string", False),
        F("color", "string", False),
        F("fx", "binary", False),
        F("n", "null"),
        F("extra", "string"),
    ]
    expected = [
        {
            "b": True,
            "i": -7,
            "l": 1 << 40,
            "f": 0.5,
            "d": -1.25,
            "s": "héllo",
            "by": "00ff",
            "day": "2024-02-29",
            "tms": us("2024-01-02T03:04:05.678+00:00"),
            "tus": us("1969-07-20T20:17:40.000001+00:00"),
            "lts": us("2024-01-02T03:04:05.000006"),
            "dec": "-1234567.89",
            "fdec": "12345678.9012",
            "u": str(uid),
            "color": "BLUE",
            "fx": "616263",
            "n": None,
            "extra": None,
        },
        {
            "b": False,
            "i": 2147483647,
            "l": -(1 << 63),
            "f": "Infinity",
            "d": "NaN",
            "s": "",
            "by": "",
            "day": "1900-01-01",
            "tms": 0,
            "tus": us("2262-04-11T00:00:00+00:00"),
            "lts": 0,
            "dec": "0.00",
            "fdec": "-0.0001",
            "u": str(uid),
            "color": "RED",
            "fx": "000102",
            "n": None,
            "extra": None,
        },
    ]
    write(
        "avro_primitives",
        {
            "description": "Avro primitives and logical types into an explicit target schema "
            "(fields matched by name; 'skipped' is read past, 'extra' is null)",
            "format": "avro",
            "schema": target,
            "options": {"avro_schema": json.dumps(prim)},
            "payloads_hex": enc(prim, recs),
            "expected": expected,
            "errors": [None, None],
        },
    )

    nested = {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "id", "type": "long"},
            {
                "name": "customer",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "Customer",
                        "fields": [
                            {"name": "name", "type": "string"},
                            {"name": "tags", "type": {"type": "array", "items": "string"}},
                        ],
                    },
                ],
            },
            {
                "name": "lines",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "Line",
                        "fields": [
                            {"name": "sku", "type": "string"},
                            {"name": "qty", "type": ["int", "long"]},
                            {"name": "note", "type": ["null", "string"], "default": None},
                        ],
                    },
                },
            },
            {"name": "props", "type": {"type": "map", "values": ["null", "double"]}},
            {"name": "choice", "type": ["null", "string", "int", "Customer"]},
            {"name": "scores", "type": {"type": "array", "items": ["float", "double"]}},
        ],
    }
    recs = [
        {
            "id": 1,
            "customer": {"name": "ann", "tags": ["a", "b"]},
            "lines": [{"sku": "x", "qty": 2, "note": None}, {"sku": "y", "qty": 1 << 40, "note": "big"}],
            "props": {"p": 1.5, "q": None},
            "choice": "text",
            "scores": [1.5, 2.25],
        },
        {"id": -2, "customer": None, "lines": [], "props": {}, "choice": 42, "scores": []},
        {
            "id": 3,
            "customer": {"name": "", "tags": []},
            "lines": [{"sku": "z", "qty": -1, "note": None}],
            "props": {"z": 0.0},
            "choice": None,
            "scores": [0.5],
        },
        {
            "id": 4,
            "customer": None,
            "lines": [],
            "props": {},
            "choice": {"name": "c", "tags": ["t"]},
            "scores": [],
        },
    ]
    customer = {
        "struct": [
            F("name", "string", False),
            F("tags", {"list": "string", "item": "element", "item_nullable": False}, False),
        ]
    }
    derived = [
        F("id", "int64", False),
        F("customer", customer),
        F(
            "lines",
            {
                "list": {
                    "struct": [F("sku", "string", False), F("qty", "int64", False), F("note", "string")]
                },
                "item": "element",
                "item_nullable": False,
            },
            False,
        ),
        F("props", {"map": ["string", "float64"]}, False),
        F("choice", {"struct": [F("member0", "string"), F("member1", "int32"), F("member2", customer)]}),
        F("scores", {"list": "float64", "item": "element", "item_nullable": False}, False),
    ]
    expected = [
        {
            "id": 1,
            "customer": {"name": "ann", "tags": ["a", "b"]},
            "lines": [{"sku": "x", "qty": 2, "note": None}, {"sku": "y", "qty": 1 << 40, "note": "big"}],
            "props": [["p", 1.5], ["q", None]],
            "choice": {"member0": "text", "member1": None, "member2": None},
            "scores": [1.5, 2.25],
        },
        {
            "id": -2,
            "customer": None,
            "lines": [],
            "props": [],
            "choice": {"member0": None, "member1": 42, "member2": None},
            "scores": [],
        },
        {
            "id": 3,
            "customer": {"name": "", "tags": []},
            "lines": [{"sku": "z", "qty": -1, "note": None}],
            "props": [["z", 0.0]],
            "choice": None,
            "scores": [0.5],
        },
        {
            "id": 4,
            "customer": None,
            "lines": [],
            "props": [],
            "choice": {"member0": None, "member1": None, "member2": {"name": "c", "tags": ["t"]}},
            "scores": [],
        },
    ]
    hexes = enc(nested, recs)
    write(
        "avro_nested",
        {
            "description": "Avro records, arrays, maps and unions with the schema derived as Spark's "
            "SchemaConverters does (union of several types -> struct of memberN)",
            "format": "avro",
            "schema": None,
            "expected_schema": derived,
            "options": {"avro_schema": json.dumps(nested)},
            "payloads_hex": hexes,
            "expected": expected,
            "errors": [None] * len(recs),
        },
    )

    small = {
        "type": "record",
        "name": "S",
        "fields": [{"name": "a", "type": "int"}, {"name": "s", "type": ["null", "string"]}],
    }
    good = enc(small, [{"a": 5, "s": "ok"}])[0]
    cases = [
        (good, {"a": -3, "s": "ok"} if False else {"a": 5, "s": "ok"}, None),
        (good[:-2], None, "truncated"),
        ("0a04", None, "union index 2 out of range"),
        (good + "00", None, "trailing bytes"),
        ("0a0204ff fe".replace(" ", ""), None, "invalid UTF-8"),
        ("", None, "truncated"),
        ("ffffffffffffffffffffff", None, "longer than 10 bytes"),
        ("0a00", {"a": 5, "s": None}, None),
    ]
    schema = [F("a", "int32", False), F("s", "string")]
    write(
        "avro_errors",
        {
            "description": "Malformed Avro datums: a null row and a per-record error",
            "format": "avro",
            "schema": schema,
            "options": {"avro_schema": json.dumps(small)},
            "payloads_hex": [c[0] for c in cases],
            "expected": [dict(null_row(schema), **(c[1] or {})) for c in cases],
            "errors": [c[2] for c in cases],
        },
    )


if __name__ == "__main__":
    json_vectors()
    avro_vectors()
    print("wrote", ", ".join(sorted(p.name for p in OUT.glob("*.json"))))
