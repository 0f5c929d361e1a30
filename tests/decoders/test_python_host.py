"""The wasmtime host (pubsub_go.wasm_authoring): API, inputs, and the sandbox."""

import json
import subprocess
import sys
import time

import pyarrow as pa
import pytest
import wasmtime

from pubsub_go.wasm_authoring import (
    Decoder,
    DecoderCrash,
    DecoderError,
    DecoderMemoryError,
    DecoderTimeout,
    builtin_path,
)

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_builtin_names_resolve_to_the_shipped_modules():
    for name in ("json", "avro"):
        assert builtin_path(name).name == f"{name}.wasm" and builtin_path(name).is_file()
    with Decoder("json", SCHEMA) as dec:
        batch, _ = dec.decode([b'{"id": 9}'])
    assert batch.column(0).to_pylist() == [9]
    with pytest.raises(ValueError, match="unknown built-in"):
        builtin_path("xml")


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p,
        lambda p: pa.array(p, pa.binary()),
        lambda p: pa.array([x.decode() for x in p], pa.string()),
        lambda p: pa.array(p, pa.large_binary()),
        lambda p: pa.chunked_array([pa.array(p[:1], pa.binary()), pa.array(p[1:], pa.binary())]),
        lambda p: pa.array([b"junk"] + p, pa.binary()).slice(1),
    ],
    ids=["list", "binary", "string", "large_binary", "chunked", "sliced"],
)
def test_payload_inputs(builtin_wasm, make):
    payloads = [b'{"id": 1, "name": "a"}', b"{bad", b'{"id": 3}']
    with Decoder(builtin_wasm / "json.wasm", SCHEMA) as dec:
        batch, errors = dec.decode(make(payloads))
    assert batch.schema.equals(SCHEMA)
    assert batch.to_pylist() == [{"id": 1, "name": "a"}, {"id": None, "name": None}, {"id": 3, "name": None}]
    assert errors.type == pa.string()
    assert errors.null_count == 2 and "expected a field name" in errors[1].as_py()


def test_null_payloads_decode_as_empty(builtin_wasm):
    with Decoder(builtin_wasm / "json.wasm", SCHEMA) as dec:
        batch, errors = dec.decode(pa.array([b'{"id": 1}', None], pa.binary()))
    assert batch.column(0).to_pylist() == [1, None]
    assert errors.null_count == 2


def test_config_errors(builtin_wasm):
    json_wasm, avro_wasm = builtin_wasm / "json.wasm", builtin_wasm / "avro.wasm"
    with pytest.raises(DecoderError, match="target schema"):
        Decoder(json_wasm)
    with pytest.raises(DecoderError, match='unknown option "nope"'):
        Decoder(json_wasm, SCHEMA, {"nope": "1"})
    with pytest.raises(DecoderError, match="avro_schema is required"):
        Decoder(avro_wasm, SCHEMA)
    with pytest.raises(DecoderError, match="invalid WebAssembly module"):
        Decoder(b"\0asm garbage")
    with pytest.raises(DecoderError, match="does not export pg_abi_version, pg_alloc"):
        Decoder(wasmtime.wat2wasm('(module (memory (export "memory") 1))'))


def test_avro_schema_derived(builtin_wasm):
    avro = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "a", "type": ["null", "long"]},
            {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        ],
    }
    with Decoder(builtin_wasm / "avro.wasm", options={"avro_schema": json.dumps(avro)}) as dec:
        assert dec.schema == pa.schema(
            [pa.field("a", pa.int64()), pa.field("t", pa.timestamp("us", "UTC"), nullable=False)]
        )
        batch, errors = dec.decode([bytes([2, 4, 0xD0, 0x0F])])  # a=2, t=1000 ms
    assert batch.to_pylist()[0]["a"] == 2
    assert batch.column(1)[0].value == 1_000_000
    assert errors.null_count == 1


def test_closed_decoder(builtin_wasm):
    dec = Decoder(builtin_wasm / "json.wasm", SCHEMA)
    dec.close()
    with pytest.raises(DecoderError, match="closed"):
        dec.decode([b"{}"])


def test_vpcflow_example(vpcflow_wasm):
    line = (
        b"2 123456789010 eni-1235b8ca123456789 172.31.16.139 172.31.16.21"
        b" 20641 22 6 20 4249 1418530010 1418530070 ACCEPT OK"
    )
    with Decoder(vpcflow_wasm) as dec:
        batch, errors = dec.decode([line, b"short line"])
    row = batch.to_pylist()[0]
    assert row["dstport"] == 22 and row["bytes"] == 4249 and row["action"] == "ACCEPT"
    assert batch.column(batch.schema.get_field_index("start"))[0].value == 1418530010 * 10**6
    assert errors.to_pylist() == [None, "want 14 space-separated fields, got 2"]


@pytest.mark.parametrize("target", [None, pa.schema([("bytes", pa.int64()), ("srcaddr", pa.string()),
                                                     ("start", pa.timestamp("us", tz="UTC"))])])
def test_vpcflow_c_port_equals_the_go_one(vpcflow_wasm, vpcflow_c_wasm, target):
    """The C SDK's module (decoder ABI 2: no IPC) gives the Go SDK's (ABI 1) rows."""
    lines = [
        b"2 123456789010 eni-1235b8ca123456789 172.31.16.139 172.31.16.21 20641 22 6 20 4249 1418530010 1418530070"
        b" ACCEPT OK",
        b"2 123456789010 eni-1 - - - - - - - 1431280876 1431280934 - NODATA",
        b"2 1 eni-1 1.1.1.1 2.2.2.2 x 22 6 1 1 1 2 REJECT OK",
        b"short line",
        b"",
    ]
    with Decoder(vpcflow_wasm, target) as go, Decoder(vpcflow_c_wasm, target) as c:
        assert c.schema.equals(go.schema)
        gb, ge = go.decode(lines)
        cb, ce = c.decode(lines)
    assert cb.equals(gb)
    # Only wanted columns are parsed: the bad srcport fails only with all columns.
    ok = [True, True, target is not None, False, False]
    assert [e is None for e in ce.to_pylist()] == [e is None for e in ge.to_pylist()] == ok


def test_broken_v2_layouts_are_crashes(badlayout_wasm):
    with Decoder(badlayout_wasm) as dec:
        assert dec.decode([b"g", b"xy"])[0].column(0).to_pylist() == ["ab", "cd"]
        for fault in (b"o", b"b", b"n", b"r", b"x"):
            with pytest.raises(DecoderCrash):
                dec.decode([fault, b"xy"])
            assert dec.decode([b"g", b"xy"])[0].column(0).to_pylist() == ["ab", "cd"]


# The sandbox -------------------------------------------------------------


def recovers(dec):
    batch, errors = dec.decode([b"ok"])
    assert batch.column(0).to_pylist() == ["ok"] and errors.null_count == 1


def test_runaway_loop_hits_time_limit(hostile_wasm):
    with Decoder(hostile_wasm, timeout=0.5) as dec:
        start = time.monotonic()
        with pytest.raises(DecoderTimeout, match="time limit"):
            dec.decode([b"loop"])
        assert time.monotonic() - start < 10
        recovers(dec)


def test_unbounded_allocation_hits_memory_cap(hostile_wasm):
    with Decoder(hostile_wasm, memory_limit_mb=48, timeout=30) as dec:
        with pytest.raises(DecoderMemoryError, match="48 MiB"):
            dec.decode([b"alloc"])
        recovers(dec)


def test_exit_is_crash(hostile_wasm):
    with Decoder(hostile_wasm) as dec:
        with pytest.raises(DecoderCrash, match="exited with code 3"):
            dec.decode([b"exit"])
        recovers(dec)


def test_guest_panic_is_row_error(hostile_wasm):
    with Decoder(hostile_wasm) as dec:
        batch, errors = dec.decode([b"panic", b"ok"])
    assert errors.to_pylist() == ["decoder panic: boom", None]
    assert batch.column(0).to_pylist() == [None, "ok"]


TRAP_WAT = """
(module
  (memory (export "memory") 1)
  (func (export "pg_abi_version") (result i32) i32.const 1)
  (func (export "pg_alloc") (param i32) (result i32) i32.const 1024)
  (func (export "pg_free") (param i32))
  (func (export "pg_init") (param i32 i32) (result i32) i32.const 0)
  (func (export "pg_decode") (param i32 i32) (result i32) unreachable)
  (func (export "pg_output") (result i64) i64.const 0)
  (func (export "pg_error") (result i64) i64.const 0))
"""


def test_trap_is_crash(hostile_wasm):
    with pytest.raises(DecoderCrash, match="unreachable"):
        Decoder(wasmtime.wat2wasm(TRAP_WAT))
    with Decoder(hostile_wasm) as dec:  # other decoders are unaffected
        recovers(dec)


def test_no_ambient_authority(hostile_wasm):
    """The WASI context grants nothing: no environment, args, files or dirs."""
    with Decoder(hostile_wasm) as dec:
        batch, _ = dec.decode([b"probe"])
    assert batch.column(0)[0].as_py() == "env=0 args=0 file=true dir=true"


def test_does_not_load_the_native_library(builtin_wasm):
    """The Python host runs modules itself: the Go library stays unloaded."""
    code = (
        "import sys, pyarrow as pa\n"
        "from pubsub_go.wasm_authoring import Decoder\n"
        f"d = Decoder({str(builtin_wasm / 'json.wasm')!r}, pa.schema([('a', pa.int64())]))\n"
        "assert d.decode([b'{\"a\": 1}'])[0].column(0).to_pylist() == [1]\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libpubsubgo' not in maps, 'libpubsubgo is loaded'\n"
        "assert 'pubsub_go._native' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
