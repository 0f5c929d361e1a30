"""The conformance vectors' schema notation and canonical values
(described in testdata/decoders/make_vectors.py), for the Python host."""

import json
import math
import re
from pathlib import Path

import pyarrow as pa

VECTORS = Path(__file__).resolve().parents[2] / "testdata" / "decoders" / "vectors"

_SIMPLE = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date32": pa.date32(),
    "null": pa.null(),
}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def all_vectors():
    return sorted(VECTORS.glob("*.json"))


def field_of(f: dict) -> pa.Field:
    return pa.field(f["name"], type_of(f["type"]), nullable=f.get("nullable", True))


def schema_of(fields) -> pa.Schema:
    return pa.schema([field_of(f) for f in fields])


def type_of(t) -> pa.DataType:
    if isinstance(t, str):
        if t in _SIMPLE:
            return _SIMPLE[t]
        m = re.fullmatch(r"decimal\((\d+),(\d+)\)", t)
        if m:
            return pa.decimal128(int(m[1]), int(m[2]))
        m = re.fullmatch(r"timestamp\[(s|ms|us|ns)(?:,(.+))?\]", t)
        if m:
            return pa.timestamp(m[1], tz=m[2])
        raise ValueError(f"unknown type {t!r}")
    if "list" in t:
        item = pa.field(t.get("item", "item"), type_of(t["list"]), nullable=t.get("item_nullable", True))
        return pa.list_(item)
    if "map" in t:
        k, v = t["map"]
        return pa.map_(type_of(k), pa.field("value", type_of(v), nullable=t.get("value_nullable", True)))
    if "struct" in t:
        return pa.struct([field_of(f) for f in t["struct"]])
    raise ValueError(f"unknown type {t!r}")


def payloads(vec: dict) -> list:
    if "payloads_hex" in vec:
        return [bytes.fromhex(h) for h in vec["payloads_hex"]]
    return [p.encode() for p in vec["payloads"]]


def canon(arr: pa.Array, i: int):
    """Value i of arr in the canonical JSON form."""
    if not arr[i].is_valid:
        return None
    t = arr.type
    v = arr[i]
    if pa.types.is_floating(t):
        f = v.as_py()
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if pa.types.is_binary(t):
        return v.as_py().hex()
    if pa.types.is_decimal(t):
        return format(v.as_py(), "f")
    if pa.types.is_date32(t):
        return v.as_py().isoformat()
    if pa.types.is_timestamp(t):
        return v.value
    if pa.types.is_map(t):
        start, end = arr.offsets[i].as_py(), arr.offsets[i + 1].as_py()
        return [[canon(arr.keys, j), canon(arr.items, j)] for j in range(start, end)]
    if pa.types.is_list(t):
        start, end = arr.offsets[i].as_py(), arr.offsets[i + 1].as_py()
        return [canon(arr.values, j) for j in range(start, end)]
    if pa.types.is_struct(t):
        return {t.field(k).name: canon(arr.field(k), i) for k in range(t.num_fields)}
    return v.as_py()


def rows(batch: pa.RecordBatch) -> list:
    return [
        {batch.schema.field(j).name: canon(batch.column(j), i) for j in range(batch.num_columns)}
        for i in range(batch.num_rows)
    ]
