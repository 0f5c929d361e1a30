"""ABI 2's pg_output on the host side: the batch's field nodes and buffers,
which point into module memory, copied out into a record batch."""

from __future__ import annotations

import struct

import pyarrow as pa

from ..schema import MODULE_ERROR_COLUMN
from .errors import DecoderCrash
from .instance import Instance


def read_layout(inst: Instance, out: bytes) -> tuple[pa.RecordBatch, pa.Array]:
    """ABI 2's pg_output: the batch's field nodes and buffers, which
    point into module memory and are copied out here."""
    try:
        rows, nn = struct.unpack_from("<II", out, 0)
        nodes = [struct.unpack_from("<II", out, 8 + 8 * i) for i in range(nn)]
        at = 8 + 8 * nn
        (nb,) = struct.unpack_from("<I", out, at)
        bufs = [struct.unpack_from("<II", out, at + 4 + 8 * i) for i in range(nb)]
    except struct.error as e:
        raise DecoderCrash(f"malformed output layout: {e}") from None
    size = inst.memory.data_len(inst.store)

    def take(validity: bool = False) -> pa.Buffer | None:
        if not bufs:
            raise DecoderCrash("output layout has too few buffers")
        ptr, n = bufs.pop(0)
        if n == 0:
            return None if validity else pa.py_buffer(b"")
        if ptr + n > size:
            raise DecoderCrash("output buffer outside module memory")
        return pa.py_buffer(bytes(inst.memory.read(inst.store, ptr, ptr + n)))

    def load(t: pa.DataType) -> pa.Array:
        if not nodes:
            raise DecoderCrash("output layout has too few nodes")
        length, nulls = nodes.pop(0)
        if pa.types.is_null(t):
            return pa.nulls(length)
        valid = take(validity=True)
        if pa.types.is_string(t) or pa.types.is_binary(t):
            return pa.Array.from_buffers(t, length, [valid, take(), take()], null_count=nulls)
        if pa.types.is_map(t) or pa.types.is_list(t):
            offs = take()
            child_type = pa.struct([t.key_field, t.item_field]) if pa.types.is_map(t) else t.value_type
            return pa.Array.from_buffers(t, length, [valid, offs], null_count=nulls, children=[load(child_type)])
        if pa.types.is_struct(t):
            kids = [load(f.type) for f in t]
            return pa.Array.from_buffers(t, length, [valid], null_count=nulls, children=kids)
        return pa.Array.from_buffers(t, length, [valid, take()], null_count=nulls)

    full = inst.v2_schema.append(pa.field(MODULE_ERROR_COLUMN, pa.string()))
    try:
        cols = [load(f.type) for f in full]
        for c in cols:
            c.validate(full=True)
    except (ValueError, pa.ArrowException) as e:
        raise DecoderCrash(f"invalid output layout: {e}") from None
    if nodes or bufs or any(len(c) != rows for c in cols):
        raise DecoderCrash("output layout does not match the schema")
    return pa.RecordBatch.from_arrays(cols[:-1], schema=inst.v2_schema), cols[-1]
