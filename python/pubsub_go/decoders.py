"""WebAssembly payload decoders, run in-process with wasmtime.

This is the Python host of the pubsub-go decoder ABI (docs/decoder-abi.md).
It runs the same ``.wasm`` modules as the Go data plane, so a decoder can be
developed and tested locally without Spark or the native library::

    from pubsub_go.decoders import Decoder
    dec = Decoder("json", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    batch, errors = dec.decode([b'{"id": 1, "name": "a"}', b"oops"])

Each module instance is sandboxed: no filesystem, network, environment or
arguments, a memory cap, and a wall-clock limit per batch. A trap, an
out-of-memory or a timeout fails that batch with a :class:`DecoderError`
and the instance is replaced on the next call.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import wasmtime

from .schema import MODULE_ERROR_COLUMN

__all__ = [
    "ABI_VERSION",
    "BUILTINS",
    "Decoder",
    "DecoderError",
    "DecoderTimeout",
    "DecoderMemoryError",
    "DecoderCrash",
    "builtin_path",
]

ABI_VERSION = 1  # also accepted: ABI_VERSION_2 (docs/decoder-abi.md#version-2)
ABI_VERSION_2 = 2
BUILTINS = ("json", "avro")

_WASM_DIR = Path(__file__).resolve().parent / "wasm"
_EXPORTS = (
    "memory",
    "pg_abi_version",
    "pg_alloc",
    "pg_free",
    "pg_init",
    "pg_decode",
    "pg_output",
    "pg_error",
)
_PAGE = 65536
_TICK = 0.01  # epoch tick, seconds


class DecoderError(Exception):
    """A batch (or the decoder's initialisation) failed."""


class DecoderTimeout(DecoderError):
    """The batch ran longer than the time limit; the instance was discarded."""


class DecoderMemoryError(DecoderError):
    """The module hit its memory cap; the instance was discarded."""


class DecoderCrash(DecoderError):
    """The module trapped or exited; the instance was discarded."""


def builtin_path(name: str) -> Path:
    """Path of a built-in decoder module ("json" or "avro")."""
    if name not in BUILTINS:
        raise ValueError(f"unknown built-in decoder {name!r}; built-ins: {', '.join(BUILTINS)}")
    path = _WASM_DIR / f"{name}.wasm"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; build it with: bash wasm-decoders/build.sh")
    return path


class _Runtime:
    """One engine per process: compiled modules are cached by content hash,
    and a ticker thread advances the epoch while any call is running so
    that each store can carry its own deadline."""

    def __init__(self) -> None:
        cfg = wasmtime.Config()
        cfg.epoch_interruption = True
        try:
            cfg.cache = True  # wasmtime's on-disk cache of compiled code
        except wasmtime.WasmtimeError:
            pass
        self.engine = wasmtime.Engine(cfg)
        self._modules: dict[str, wasmtime.Module] = {}
        self._lock = threading.Lock()
        self._active = 0
        self._cond = threading.Condition(self._lock)
        self._ticker: threading.Thread | None = None

    def module(self, code: bytes) -> wasmtime.Module:
        key = hashlib.sha256(code).hexdigest()
        with self._lock:
            mod = self._modules.get(key)
        if mod is None:
            mod = wasmtime.Module(self.engine, code)
            with self._lock:
                mod = self._modules.setdefault(key, mod)
        return mod

    def begin(self) -> None:
        with self._cond:
            self._active += 1
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._tick, name="pubsub-go-wasm-epoch", daemon=True)
                self._ticker.start()
            self._cond.notify_all()

    def end(self) -> None:
        with self._cond:
            self._active -= 1

    def _tick(self) -> None:
        while True:
            with self._cond:
                while self._active == 0:
                    self._cond.wait()
            self.engine.increment_epoch()
            time.sleep(_TICK)


_runtime: _Runtime | None = None
_runtime_lock = threading.Lock()


def _get_runtime() -> _Runtime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = _Runtime()
        return _runtime


def _encode_config(schema: pa.Schema | None, options: Mapping[str, str], abi: int = ABI_VERSION) -> bytes:
    if schema is None:
        schema_bytes = b""
    elif abi == ABI_VERSION_2:
        schema_bytes = _encode_fields(list(schema))
    else:
        schema_bytes = schema.serialize().to_pybytes()
    parts = [struct.pack("<I", len(schema_bytes)), schema_bytes, struct.pack("<I", len(options))]
    for k in sorted(options):
        kb, vb = str(k).encode(), str(options[k]).encode()
        parts += [struct.pack("<I", len(kb)), kb, struct.pack("<I", len(vb)), vb]
    return b"".join(parts)


# ABI 2's schema form (go/internal/decode/abiv2.go): u32 count, then per
# field u32 name length, name, u8 type id (Schema.fbs), u8 nullable, i32
# p1, i32 p2, u32 tz length, tz, u32 child count, children.
_UNITS = ("s", "ms", "us", "ns")


def _encode_fields(fields: list[pa.Field]) -> bytes:
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
                tz.encode(), _encode_fields(children)]
    return b"".join(out)


def _decode_fields(b: memoryview, at: int = 0) -> tuple[list[pa.Field], int]:
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
        children, at = _decode_fields(b, at)
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


def _encode_input(payloads: pa.Array | pa.ChunkedArray | Iterable[bytes]) -> bytes:
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


class _Instance:
    """One instantiated module with its store (not thread-safe)."""

    def __init__(self, rt: _Runtime, module: wasmtime.Module, memory_limit: int, ticks: int) -> None:
        self.store = wasmtime.Store(rt.engine)
        self.store.set_limits(memory_size=memory_limit)
        # stderr goes to a private temp file, quoted in error messages.
        fd, self._stderr_path = tempfile.mkstemp(prefix="pubsub-go-wasm-", suffix=".stderr")
        os.close(fd)
        self.memory: wasmtime.Memory | None = None
        self._in_ptr = 0
        self._in_cap = 0
        try:
            wasi = wasmtime.WasiConfig()  # no args, env, preopened dirs or stdin/stdout
            wasi.stderr_file = self._stderr_path
            self.store.set_wasi(wasi)
            linker = wasmtime.Linker(rt.engine)
            linker.define_wasi()
            self.store.set_epoch_deadline(ticks)  # bounds _initialize too
            ex = linker.instantiate(self.store, module).exports(self.store)
            self.exports = ex
            missing = [n for n in _EXPORTS if n not in ex]
            if missing:
                raise DecoderError(
                    f"module does not export {', '.join(missing)} (not a decoder module?)"
                )
            self.memory = ex["memory"]
            if "_initialize" in ex:
                ex["_initialize"](self.store)
            self.abi = ex["pg_abi_version"](self.store)
            if self.abi not in (ABI_VERSION, ABI_VERSION_2):
                raise DecoderError(f"module implements decoder ABI {self.abi}, this host {ABI_VERSION} and "
                                   f"{ABI_VERSION_2}")
            if self.abi == ABI_VERSION_2 and "pg_schema" not in ex:
                raise DecoderError("module does not export pg_schema (required by decoder ABI 2)")
        except BaseException:
            self.close()
            raise

    def stderr_head(self) -> str:
        """The first lines the module wrote to stderr (a Go guest's fatal
        error comes before its goroutine dump)."""
        try:
            with open(self._stderr_path, "rb") as f:
                text = f.read(4096).decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:3]
        return "; ".join(lines)[:300]

    def close(self) -> None:
        try:
            os.unlink(self._stderr_path)
        except OSError:
            pass

    def _read_packed(self, packed: int) -> bytes:
        packed &= (1 << 64) - 1
        ptr, n = packed >> 32, packed & 0xFFFFFFFF
        if n == 0:
            return b""
        if ptr + n > self.memory.data_len(self.store):
            raise DecoderCrash("module returned an out-of-bounds (ptr, len)")
        return bytes(self.memory.read(self.store, ptr, ptr + n))

    def _write(self, data: bytes) -> int:
        if len(data) > self._in_cap:
            if self._in_cap:
                self.exports["pg_free"](self.store, self._in_ptr)
            cap = max(len(data), 2 * self._in_cap, 4096)
            ptr = self.exports["pg_alloc"](self.store, cap) & 0xFFFFFFFF
            if ptr == 0:
                raise DecoderMemoryError(f"pg_alloc({cap}) failed")
            self._in_ptr, self._in_cap = ptr, cap
        self.memory.write(self.store, data, self._in_ptr)
        return self._in_ptr

    def call(self, fn: str, data: bytes) -> bytes:
        """Calls pg_init or pg_decode with data; returns pg_output's bytes."""
        ptr = self._write(data)
        status = self.exports[fn](self.store, ptr, len(data))
        if status != 0:
            msg = self._read_packed(self.exports["pg_error"](self.store)).decode("utf-8", "replace")
            raise DecoderError(msg or f"{fn} failed with status {status}")
        if fn == "pg_init":
            return b""
        return self._read_packed(self.exports["pg_output"](self.store))


class Decoder:
    """Decodes batches of payloads into Arrow record batches.

    ``wasm`` is a built-in name ("json", "avro"), a path to a ``.wasm`` file
    or the module bytes. ``schema`` is the target schema (required by the
    JSON decoder; optional for Avro, which then derives it from the
    "avro_schema" option the way Spark's from_avro does). ``options`` are
    decoder options (strings).
    """

    def __init__(
        self,
        wasm: str | os.PathLike | bytes,
        schema: pa.Schema | None = None,
        options: Mapping[str, str] | None = None,
        *,
        memory_limit_mb: int = 256,
        timeout: float = 10.0,
    ) -> None:
        if isinstance(wasm, (bytes, bytearray)):
            code = bytes(wasm)
        else:
            path = builtin_path(wasm) if isinstance(wasm, str) and wasm in BUILTINS else Path(wasm)
            code = path.read_bytes()
        if memory_limit_mb <= 0 or timeout <= 0:
            raise ValueError("memory_limit_mb and timeout must be positive")
        self._rt = _get_runtime()
        try:
            self._module = self._rt.module(code)
        except wasmtime.WasmtimeError as e:
            raise DecoderError(f"invalid WebAssembly module: {e}") from e
        self._target = schema
        self._options = dict(options or {})
        self._memory_limit = memory_limit_mb * 1024 * 1024
        self._timeout = timeout
        self._lock = threading.Lock()
        self._inst: _Instance | None = None
        self._closed = False
        # A zero-row batch validates the config and yields the schema.
        empty, _ = self.decode([])
        self.schema: pa.Schema = empty.schema
        if schema is not None and not self.schema.equals(schema):
            raise DecoderError(f"module produced schema {self.schema}, expected {schema}")

    def __enter__(self) -> Decoder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._discard()

    def _discard(self) -> None:
        if self._inst is not None:
            self._inst.close()
            self._inst = None

    def _instance(self) -> _Instance:
        if self._inst is None:
            inst = self._guard(
                lambda: _Instance(self._rt, self._module, self._memory_limit, self._ticks()), None
            )
            try:
                config = _encode_config(self._target, self._options, inst.abi)
                self._guard(lambda: inst.call("pg_init", config), inst)
                if inst.abi == ABI_VERSION_2:
                    out = self._guard(lambda: inst._read_packed(inst.exports["pg_schema"](inst.store)), inst)
                    fields = list(self._target) if self._target is not None else _decode_fields(memoryview(out))[0]
                    inst.v2_schema = pa.schema(fields, metadata=self._target.metadata if self._target else None)
            except DecoderError:
                inst.close()
                raise
            self._inst = inst
        return self._inst

    def _ticks(self) -> int:
        return max(1, int(self._timeout / _TICK) + 1)

    def _guard(self, fn, inst: _Instance | None):
        """Runs fn under the time limit, mapping traps to DecoderErrors."""
        if inst is not None:
            inst.store.set_epoch_deadline(self._ticks())
        self._rt.begin()
        try:
            return fn()
        except wasmtime.ExitTrap as e:
            raise self._crash(inst, f"module exited with code {e.code}") from e
        except wasmtime.Trap as e:
            if e.trap_code == wasmtime.TrapCode.INTERRUPT:
                raise DecoderTimeout(f"decoder exceeded the time limit of {self._timeout:g}s") from e
            raise self._crash(inst, f"module trapped: {e.message}") from e
        except wasmtime.WasmtimeError as e:
            raise self._crash(inst, f"module failed: {e}") from e
        finally:
            self._rt.end()
            if inst is not None:
                inst.store.set_epoch_deadline(1 << 62)

    def _crash(self, inst: _Instance | None, msg: str) -> DecoderError:
        tail = inst.stderr_head() if inst is not None else ""
        if inst is not None and inst.memory is not None:
            used = inst.memory.data_len(inst.store)
            if "out of memory" in tail or used + 16 * _PAGE > self._memory_limit:
                return DecoderMemoryError(
                    f"decoder exceeded the memory limit of {self._memory_limit >> 20} MiB ({msg})"
                )
        return DecoderCrash(msg + (f": {tail}" if tail else ""))

    def decode(
        self, payloads: pa.Array | pa.ChunkedArray | Iterable[bytes]
    ) -> tuple[pa.RecordBatch, pa.Array]:
        """Decodes one batch. Returns the decoded rows and a utf8 array of
        per-row errors (null for rows that decoded)."""
        data = _encode_input(payloads)
        with self._lock:
            if self._closed:
                raise DecoderError("decoder is closed")
            inst = self._instance()
            try:
                out = self._guard(lambda: inst.call("pg_decode", data), inst)
                if inst.abi == ABI_VERSION_2:
                    return self._read_layout(inst, out)
            except (DecoderTimeout, DecoderMemoryError, DecoderCrash):
                self._discard()
                raise
        reader = pa.ipc.open_stream(pa.py_buffer(out))
        batch = reader.read_next_batch()
        n = batch.num_columns - 1
        if n < 0 or batch.schema.field(n).name != MODULE_ERROR_COLUMN:
            raise DecoderError(f"module output lacks the {MODULE_ERROR_COLUMN} column")
        errors = batch.column(n)
        decoded = pa.RecordBatch.from_arrays(
            batch.columns[:n], schema=pa.schema(list(batch.schema)[:n], metadata=batch.schema.metadata)
        )
        return decoded, errors

    def _read_layout(self, inst: _Instance, out: bytes) -> tuple[pa.RecordBatch, pa.Array]:
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
