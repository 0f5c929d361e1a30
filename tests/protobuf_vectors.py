"""A protobuf message type and messages written by Google's protobuf
library (upb), with the row Spark's from_protobuf makes of each by its
default rules (tests/test_protobuf.py, tests/test_schema_mode.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format, timestamp_pb2, wrappers_pb2  # noqa: F401  (their files join the default pool)

# The message the Go tests use (go/internal/decode/protobuf_test.go), as
# .proto source (what Pub/Sub stores) and as the descriptor protoc writes.
SOURCE = (Path(__file__).resolve().parents[1] / "testdata" / "protobuf" / "event.proto").read_text()

_F = "label: LABEL_OPTIONAL type: TYPE_"
FILE = text_format.Parse(f"""
name: "pgtest.proto" package: "pgtest" syntax: "proto3"
dependency: "google/protobuf/timestamp.proto" dependency: "google/protobuf/wrappers.proto"
enum_type {{ name: "Color" value {{ name: "COLOR_UNSPECIFIED" number: 0 }} value {{ name: "RED" number: 1 }}
             value {{ name: "GREEN" number: 2 }} }}
message_type {{ name: "Inner" field {{ name: "name" number: 1 {_F}STRING }}
                field {{ name: "nums" number: 2 label: LABEL_REPEATED type: TYPE_INT32 }} }}
message_type {{ name: "Event"
  field {{ name: "id" number: 1 {_F}INT64 }}
  field {{ name: "title" number: 2 {_F}STRING }}
  field {{ name: "inner" number: 3 {_F}MESSAGE type_name: ".pgtest.Inner" }}
  field {{ name: "items" number: 4 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".pgtest.Inner" }}
  field {{ name: "counts" number: 5 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".pgtest.Event.CountsEntry" }}
  field {{ name: "color" number: 6 {_F}ENUM type_name: ".pgtest.Color" }}
  field {{ name: "at" number: 7 {_F}MESSAGE type_name: ".google.protobuf.Timestamp" }}
  field {{ name: "maybe" number: 8 {_F}MESSAGE type_name: ".google.protobuf.Int64Value" }}
  field {{ name: "text" number: 9 {_F}STRING oneof_index: 0 }}
  field {{ name: "number" number: 10 {_F}INT32 oneof_index: 0 }}
  field {{ name: "opt" number: 11 {_F}INT32 oneof_index: 1 proto3_optional: true }}
  field {{ name: "u32" number: 12 {_F}UINT32 }}
  field {{ name: "s64" number: 13 {_F}SINT64 }}
  field {{ name: "score" number: 14 {_F}DOUBLE }}
  field {{ name: "blob" number: 15 {_F}BYTES }}
  field {{ name: "colors" number: 16 label: LABEL_REPEATED type: TYPE_ENUM type_name: ".pgtest.Color" }}
  field {{ name: "byid" number: 17 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".pgtest.Event.ByidEntry" }}
  field {{ name: "flag" number: 18 {_F}BOOL }}
  nested_type {{ name: "CountsEntry" field {{ name: "key" number: 1 {_F}STRING }}
                field {{ name: "value" number: 2 {_F}INT64 }} options {{ map_entry: true }} }}
  nested_type {{ name: "ByidEntry" field {{ name: "key" number: 1 {_F}INT32 }}
                field {{ name: "value" number: 2 {_F}MESSAGE type_name: ".pgtest.Inner" }}
                options {{ map_entry: true }} }}
  oneof_decl {{ name: "choice" }} oneof_decl {{ name: "_opt" }}
}}
""", descriptor_pb2.FileDescriptorProto())
DESCRIPTOR_SET = descriptor_pb2.FileDescriptorSet(file=[FILE]).SerializeToString()  # imports left to the decoder


def descriptor_set_with_imports() -> bytes:
    """DESCRIPTOR_SET with the files it imports (Timestamp, wrappers), as
    Spark's from_protobuf needs it: it resolves no well-known type itself."""
    files = []
    for d in (timestamp_pb2.DESCRIPTOR, wrappers_pb2.DESCRIPTOR):
        fdp = descriptor_pb2.FileDescriptorProto()
        d.CopyToProto(fdp)
        files.append(fdp)
    return descriptor_pb2.FileDescriptorSet(file=[*files, FILE]).SerializeToString()

_pool = descriptor_pool.Default()
try:
    _pool.FindFileByName(FILE.name)
except KeyError:
    _pool.Add(FILE)
Event = message_factory.GetMessageClass(_pool.FindMessageTypeByName("pgtest.Event"))


def events(n: int) -> list:
    """Messages that cover zeros, absences, both oneof members, maps with a
    missing value, packed lists, unsigned wrap-around and nested messages."""
    out = []
    for i in range(n):
        e = Event(id=i * 1_000_003 - 5, title="" if i % 4 == 0 else f"title-{i} \u2713", color=i % 3,
                  u32=(2**32 - i) % 2**32, s64=-i, score=i / 4, blob=bytes([i % 256, 0]) if i % 3 else b"",
                  flag=i % 2 == 1)
        if i % 2:
            e.inner.name = f"in-{i}"
            e.inner.nums.extend(range(i % 4))
        if i % 3 == 0:
            e.inner.SetInParent()  # present but empty: a struct of nulls, not null
        for j in range(i % 3):
            e.items.add(name="" if j == 0 else f"item-{j}", nums=[j, 0])
        e.counts.update({f"k{j}": j - 1 for j in range(i % 4)})
        if i % 5:
            e.at.FromDatetime(dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc) + dt.timedelta(
                seconds=i * 3601, microseconds=i * 7))
        if i % 4 == 1:
            e.maybe.value = 0
        elif i % 4 == 2:
            e.maybe.value = i
        if i % 3 == 1:
            e.text = f"text-{i}"
        elif i % 3 == 2:
            e.number = 0
        if i % 2 == 0:
            e.opt = 0
        e.colors.extend([i % 3, 0, 2])
        if i % 4 == 3:
            e.byid[i].name = "x"
            e.byid[0].SetInParent()
        out.append(e)
    return out


def expected(msg) -> dict:
    """The row Spark's from_protobuf makes of msg, by its rules, with what
    Google's parser says the message holds."""
    set_fields = {f.name for f, _ in msg.ListFields()}
    row = {}
    for f in msg.DESCRIPTOR.fields:
        v = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            row[f.name] = sorted((k, _value(vf, v[k])) for k in v)
        elif f.is_repeated:
            row[f.name] = [_value(f, x) for x in v]
        else:
            row[f.name] = _value(f, v) if f.name in set_fields else None
    return row


def _value(f, v):
    if f.message_type is not None:
        if f.message_type.full_name == "google.protobuf.Timestamp":
            return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
                microseconds=v.seconds * 1_000_000 + v.nanos // 1000)
        return expected(v)
    if f.enum_type is not None:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev else f"UNKNOWN_ENUM_VALUE_{f.enum_type.name}_{v}"
    if f.type == f.TYPE_UINT32:
        return v - 2**32 if v >= 2**31 else v
    return v


def normalize(row: dict) -> dict:
    """Arrow's and Spark's maps (lists of pairs, dicts) as sorted pairs,
    structs as dicts, nested."""
    def norm(v):
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            if v and isinstance(v[0], tuple):
                return sorted((k, norm(x)) for k, x in v)
            return [norm(x) for x in v]
        if isinstance(v, dt.datetime):
            return v.astimezone(dt.timezone.utc)
        if isinstance(v, bytearray):
            return bytes(v)
        return v
    return {k: norm(v) for k, v in row.items()}


def spark_row(row) -> dict:
    """A Spark Row as normalize gives Arrow's: its maps (dicts, as asDict
    gives them, like structs) as sorted pairs."""
    d = row.asDict(recursive=True)
    return normalize({k: sorted(v.items()) if k in ("counts", "byid") and v is not None else v
                      for k, v in d.items()})

