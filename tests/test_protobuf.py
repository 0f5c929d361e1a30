"""format=protobuf: payloads written by Google's protobuf library (upb)
decode into the columns Spark's from_protobuf gives them by default (its
rules: a proto3 field without presence that holds its zero is null, list
items and map entries keep theirs, enums by name, Timestamp as TIMESTAMP,
wrappers as struct<value>, uint32 as INT), through pubsub_go.decode (the source's
test is in test_schema_mode.py). The expected rows come from Google's
parser's view of each message (which fields it says are set, and their
values), so this runs everywhere; tests/test_protobuf_vs_spark.py checks
the same messages against Spark's own from_protobuf where spark-protobuf
can be had (it skips otherwise)."""

from __future__ import annotations

import base64
import struct

import pyarrow as pa
import pytest
from google.protobuf import json_format

import pubsub_go
from protobuf_vectors import DESCRIPTOR_SET, Event, events, expected, normalize
from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.options.protobuf_options import parse_protobuf

# An unknown enum number (in a field and a packed run after an unpacked
# item), a proto3 zero written explicitly, -0.0, a map entry without its
# value, a oneof's second member after its first. protobuf-java's
# DynamicMessage (what from_protobuf reads) reads these as Google's Python
# parser does, checked by hand with protobuf-java 4.33.5.
WIRE_CASES = [bytes([0x30, 5, 0x08, 0, 0x71]) + struct.pack("<d", -0.0) + bytes([0x2a, 3, 0x0a, 1, ord("k")])
              + bytes([0x4a, 1, ord("t"), 0x50, 7, 0x80, 1, 5, 0x82, 1, 1, 1])]


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_decode_equals_googles_view_of_the_messages(encoding):
    msgs = events(24)
    if encoding == "binary":  # wire forms Google's serializer never writes
        msgs += [Event.FromString(p) for p in WIRE_CASES]
    if encoding == "json":
        payloads = [json_format.MessageToJson(m).encode() for m in msgs]
    else:
        payloads = [m.SerializeToString() for m in msgs]
    bad = b"\x12\xff" if encoding == "binary" else b'{"id": "x"}'
    batch = pubsub_go.decode(pa.array(payloads + [bad]), format="protobuf", protobuf_descriptor_set=DESCRIPTOR_SET,
                             protobuf_message="pgtest.Event", protobuf_encoding=encoding)
    assert batch.schema.field("counts").type == pa.map_(pa.string(), pa.field("value", pa.int64(), False))
    assert batch.schema.field("at").type == pa.timestamp("us", tz="UTC")
    rows = batch.to_pylist()
    for i, m in enumerate(msgs):
        got = {k: v for k, v in rows[i].items() if k != "__decode_error"}
        assert rows[i]["__decode_error"] is None
        want = expected(m)
        assert normalize(got) == normalize(want), (i, m)
    assert rows[-1]["id"] is None
    assert ("malformed protobuf" if encoding == "binary" else "protobuf JSON") in rows[-1]["__decode_error"]


@pytest.mark.parametrize("opts,msg", [
    ({"format": "protobuf"}, "protobufMessage is required"),
    ({"format": "protobuf", "protobufmessage": "a.B"}, "needs exactly one of protobufDescriptorFile"),
    ({"format": "protobuf", "protobufmessage": "a.B", "protobufsource": "x", "protobufdescriptorset": "eA=="},
     "got protobufDescriptorSet and protobufSource"),
    ({"format": "protobuf", "protobufmessage": "a.B", "protobufdescriptorset": "not base64!"}, "is not base64"),
    ({"format": "protobuf", "protobufmessage": "a.B", "protobufdescriptorfile": "/nonexistent.desc"},
     "protobufDescriptorFile='/nonexistent.desc'"),
    ({"format": "protobuf", "protobufmessage": "a.B", "protobufsource": "x", "protobufencoding": "text"},
     "protobufEncoding='text' is not one of binary, json"),
    ({"format": "json", "protobufmessage": "a.B"}, "protobufMessage only applies to format=protobuf"),
])
def test_options_name_the_problem(opts, msg):
    with pytest.raises(OptionError, match=msg):
        parse_protobuf(opts, opts.get("format"))


def test_descriptor_file_is_read_on_the_driver(tmp_path):
    path = tmp_path / "event.desc"
    path.write_bytes(DESCRIPTOR_SET)
    got = parse_protobuf({"protobufmessage": "pgtest.Event", "protobufdescriptorfile": str(path),
                          "protobufencoding": "JSON"}, "protobuf")
    assert got == {"protobuf_message": "pgtest.Event", "protobuf_encoding": "json",
                   "protobuf_descriptor_set": base64.b64encode(DESCRIPTOR_SET).decode()}
