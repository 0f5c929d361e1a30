"""The decoder ABI's byte forms on the host side (docs/decoder-abi.md): the
pg_init config, ABI 2's schema form, and the pg_decode input."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from .errors import DecoderCrash, DecoderError

ABI_VERSION = 1  # also accepted: ABI_VERSION_2 (docs/decoder-abi.md#version-2)
ABI_VERSION_2 = 2


def encode_config(schema: pa.Schema | None, options: Mapping[str, str], abi: int = ABI_VERSION) -> bytes:
    if schema is None:
        schema_bytes = b""
    elif abi == ABI_VERSION_2:
        schema_bytes = encode_fields(list(schema))
    else:
        schema_bytes = schema.serialize().to_pybytes()
    parts = [struct.pack("<I", len(schema_bytes)), schema_bytes, struct.pack("<I", len(options))]
    for k in sorted(options):
        kb, vb = str(k).encode(), str(options[k]).encode()
        parts += [struct.pack("<I", len(kb)), kb, struct.pack("<I", len(vb)), vb]
    return b"".join(parts)


# ABI 2's schema form (go/internal/decode/internal/abi, layout.go): u32 count, then per
# field u32 name length, name, u8 type id (Schema.fbs), u8 nullable, i32
# p1, i32 p2, u32 tz length, tz, u32 child count, children.
_UNITS = ("s", "ms", "us", "ns")


def encode_fields(fields: list[pa.Field]) -> bytes:
    out = [struct.pack("<I", len(fields))]
    for f in fields:
        t, p1, p2, tz, children = f.type, 0, 0, "", []
        if pa.types.is_null(t):
            tid = 1
        elif pa.types.is_integer(t):
            tid, p1, p2 = 2, t.bit_width, int(pa.types.is_signed_integer(t))
        elif pa.types.is_float32(t) or pa.types.is_float64(t):
            tid, p1 = 3, 1 if pa.types.is_float32(t) else 2
        elif pa.types.is_binary(t):
            tid = 4
        elif pa.types.is_string(t):
            tid = 5
        elif pa.types.is_boolean(t):
            tid = 6
        elif pa.types.is_decimal128(t):
            tid, p1, p2 = 7, t.precision, t.scale
        elif pa.types.is_date32(t) or pa.types.is_date64(t):
            tid, p1 = 8, int(pa.types.is_date64(t))
        elif pa.types.is_timestamp(t):
            tid, p1, tz = 10, _UNITS.index(t.unit), t.tz or ""
        elif pa.types.is_map(t):
            tid = 17
            children = [pa.field("entries", pa.struct([t.key_field, t.item_field]), False)]
        elif pa.types.is_list(t):
            tid, children = 12, [t.value_field]
        elif pa.types.is_struct(t):
            tid, children = 13, list(t)
        else:
            raise DecoderError(f"type {t} is not supported by decoder ABI 2")
        name = f.name.encode()
        out += [struct.pack("<I", len(name)), name, struct.pack("<BBiiI", tid, int(f.nullable), p1, p2, len(tz)),
                tz.encode(), encode_fields(children)]
    return b"".join(out)


def decode_fields(b: memoryview, at: int = 0) -> tuple[list[pa.Field], int]:
    (n,) = struct.unpack_from("<I", b, at)
    at += 4
    fields = []
    for _ in range(n):
        (ln,) = struct.unpack_from("<I", b, at)
        name = bytes(b[at + 4 : at + 4 + ln]).decode()
        at += 4 + ln
        tid, nullable, p1, p2, tzl = struct.unpack_from("<BBiiI", b, at)
        at += 14
        tz = bytes(b[at : at + tzl]).decode()
        at += tzl
        children, at = decode_fields(b, at)
        simple = {1: pa.null(), 4: pa.binary(), 5: pa.string(), 6: pa.bool_()}
        if tid in simple:
            t = simple[tid]
        elif tid == 2:
            t = getattr(pa, f"{'' if p2 else 'u'}int{p1}")()
        elif tid == 3:
            t = pa.float32() if p1 == 1 else pa.float64()
        elif tid == 7:
            t = pa.decimal128(p1, p2)
        elif tid == 8:
            t = pa.date64() if p1 else pa.date32()
        elif tid == 10:
            t = pa.timestamp(_UNITS[p1], tz=tz or None)
        elif tid == 12:
            t = pa.list_(children[0])
        elif tid == 13:
            t = pa.struct(children)
        elif tid == 17:
            entries = children[0].type
            t = pa.map_(entries.field(0), entries.field(1))
        else:
            raise DecoderCrash(f"pg_schema: unsupported type id {tid}")
        fields.append(pa.field(name, t, bool(nullable)))
    return fields, at


def encode_input(payloads: pa.Array | pa.ChunkedArray | Iterable[bytes]) -> bytes:
    """The pg_decode input: u32 count, count+1 u32 offsets, then the bytes.
    Null payloads become empty ones."""
    if isinstance(payloads, (pa.Array, pa.ChunkedArray)):
        t = payloads.type
        if not (
            pa.types.is_binary(t)
            or pa.types.is_string(t)
            or pa.types.is_large_binary(t)
            or pa.types.is_large_string(t)
        ):
            raise TypeError(f"payloads must be binary or string, not {t}")
        if isinstance(payloads, pa.ChunkedArray):
            payloads = payloads.combine_chunks()
        arr = payloads.cast(pa.binary())
        if arr.null_count:
            arr = arr.fill_null(b"")
        n = len(arr)
        _, obuf, data = arr.buffers()
        if obuf is None:  # an empty array may have no offsets buffer
            return struct.pack("<2I", 0, 0)
        offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, obuf], offset=arr.offset)
        start, end = offsets[0].as_py(), offsets[n].as_py()
        if start:
            offsets = pc.subtract(offsets, pa.scalar(start, pa.int32()))
        raw = memoryview(offsets.buffers()[1])[offsets.offset * 4 : (offsets.offset + n + 1) * 4]
        body = memoryview(data)[start:end] if data is not None else b""
        return b"".join((struct.pack("<I", n), raw, body))
    items = [bytes(p) for p in payloads]
    offs = [0]
    for p in items:
        offs.append(offs[-1] + len(p))
    return struct.pack(f"<{len(offs) + 1}I", len(items), *offs) + b"".join(items)
