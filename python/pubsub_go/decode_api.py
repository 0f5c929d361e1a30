"""The public ``pubsub_go.decode``: the decoders schema mode runs, on any
array of payloads, on the native data plane: the built-in ``json`` and
``avro`` decoders natively in Go, a user's WebAssembly module
(``decoder=path``) in the Go host's sandbox (memory cap, time limit, no
files, network or environment); e.g. in ``mapInArrow`` on payloads from
files, Kafka or the source's raw mode (docs/decode.md). The library loads
on first use. (Not named decode.py: a submodule of that name would replace
the function ``pubsub_go.decode`` once imported.)"""

from __future__ import annotations

import base64
import json
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from . import _native, contract
from .client import _Handle, _ptr
from .configs import DecoderConfig
from .errors import InvalidArgumentError
from .schema import DECODE_ERROR_COLUMN

__all__ = ["DECODE_ERROR_COLUMN", "DEFAULT_MEMORY_LIMIT_MB", "DEFAULT_TIMEOUT_MS", "NativeDecoder", "decode"]

DEFAULT_TIMEOUT_MS = contract.limit("decoder_config", "timeout_ms").default
DEFAULT_MEMORY_LIMIT_MB = contract.limit("decoder_config", "memory_limit_mb").default
BUILTIN_FORMATS = tuple(contract.builtin_formats())
# The source's onDecodeError words for the same outcomes; "raise", the former
# spelling of "fail", is still taken (docs/glossary.md lists such spellings).
ON_ERROR = ("column", "null", "fail")
RENAMED_ON_ERROR = {"raise": "fail"}
# What runs a decoder module (go/internal/decode.EngineNames via the contract); the first,
# auto, is the default: wasmtime when its package is installed (RATIONALE.md), else wazero.
ENGINES = tuple(contract.decoder_engines())


def _arrow_schema(schema: Any) -> pa.Schema | None:
    if schema is None or isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, str):  # DDL text, as from_json takes it
        from .ddl import parse_ddl

        schema = parse_ddl(schema)
    try:
        from pyspark.sql.types import StructType
    except ImportError:  # pragma: no cover - pyspark is a dependency of the Spark source only
        StructType = None  # noqa: N806
    if StructType is not None and isinstance(schema, StructType):
        from ._spark_version import spark_to_arrow_schema

        return spark_to_arrow_schema(schema)
    raise InvalidArgumentError.new("schema must be a pyarrow.Schema, a pyspark StructType or DDL text, "
                                   f"got {type(schema).__name__}")


def decoder_config(format: str | None = None, schema: pa.Schema | None = None, decoder: str | None = None,
                   options: Mapping[str, Any] | None = None, *, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                   memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB, engine: str = ENGINES[0]) -> DecoderConfig:
    """The library's decoder config (go/internal/decode.DecoderConfig)."""
    if engine not in ENGINES:
        raise InvalidArgumentError.new(f"engine={engine!r}; expected one of {', '.join(ENGINES)}")
    library = ""
    if engine != "wazero":
        from . import wasmtime_library

        library = wasmtime_library.find() or ""
        if not library and engine == "wasmtime":
            raise InvalidArgumentError.new("engine='wasmtime' needs the wasmtime package's C library "
                                           "(pip install 'pubsub-go[wasm]'); engine='auto' (the default) "
                                           "runs the module in wazero without it")
    builtins = " or ".join(BUILTIN_FORMATS)
    if (format is None) == (decoder is None):
        raise InvalidArgumentError.new(f"give exactly one of format (a built-in decoder: {builtins}) and decoder "
                                       "(the path of a .wasm decoder module)")
    if format is not None and format not in BUILTIN_FORMATS:
        raise InvalidArgumentError.new(f"format={format!r} is not a built-in decoder; expected {builtins} "
                                       "(or decoder=<path to a .wasm module> for other formats)")
    opts = {}
    for k, v in (options or {}).items():
        if isinstance(v, (bytes, bytearray)):  # e.g. protobuf_descriptor_set as read from its file
            v = base64.b64encode(v).decode()
        opts[k] = v if isinstance(v, str) else json.dumps(v)  # e.g. avro_schema given as a dict
    return DecoderConfig(
        format=format or os.path.basename(str(decoder)), options=opts, timeout_ms=timeout_ms,
        memory_limit_mb=memory_limit_mb, wasm=os.path.abspath(decoder) if decoder is not None else "",
        schema=base64.b64encode(schema.serialize().to_pybytes()).decode() if schema is not None else "",
        engine=engine, wasmtime_library=library)


class _CallStructs:
    """The C structs of one pg_decoder_decode call, kept per thread: a call
    moves or releases every one of them, so the next call on the thread
    finds them empty. Allocating them anew each batch was a measurable part
    of a batch's CPU time (bench/results/decode_results.md)."""

    def __init__(self) -> None:
        f = _native.ffi()
        self.arr, self.out = f.new("struct ArrowArray*"), f.new("struct ArrowArray*")
        self.sch, self.out_sch = f.new("struct ArrowSchema*"), f.new("struct ArrowSchema*")
        self.err = _native.new_error()
        self.null = f.NULL
        self.arr_p, self.sch_p, self.out_p, self.out_sch_p = (_ptr(self.arr), _ptr(self.sch), _ptr(self.out),
                                                              _ptr(self.out_sch))


_per_thread = threading.local()


def _call_structs() -> _CallStructs:
    c = getattr(_per_thread, "structs", None)
    if c is None:
        c = _per_thread.structs = _CallStructs()
    return c


class NativeDecoder(_Handle):
    """One decoder opened in the native library; safe to share between
    threads. Prefer :func:`decode`, which keeps decoders open for reuse."""

    _close_fn = "pg_decoder_close"
    _what = "decoder"

    def __init__(self, config: DecoderConfig) -> None:
        self._open("pg_decoder_open", config.to_json())
        sch = _native.ffi().new("struct ArrowSchema*")
        _native.call("pg_decoder_schema", self._h, sch)
        self.schema: pa.Schema = pa.Schema._import_from_c(_ptr(sch))
        # The output batches' schema (decoded columns plus __decode_error),
        # as the library exported it with the first batch; later batches
        # come without one (pg_decoder_decode's out_schema NULL).
        self._batch_schema: pa.Schema | None = None

    def decode(self, payloads: pa.Array) -> pa.RecordBatch:
        """Decoded columns plus ``__decode_error`` (null where the row decoded)."""
        h = self._handle()
        c = _call_structs()
        known = self._batch_schema
        payloads._export_to_c(c.arr_p, c.sch_p)
        rc = _native.lib().pg_decoder_decode(h, c.arr, c.sch, c.out, c.null if known is not None else c.out_sch,
                                             c.err)
        if rc:
            _per_thread.structs = None  # a failed call may leave them filled: the next gets new ones
            _native.check(rc, c.err)
        if known is not None:
            return pa.RecordBatch._import_from_c(c.out_p, known)
        batch = pa.RecordBatch._import_from_c(c.out_p, c.out_sch_p)
        self._batch_schema = batch.schema
        return batch

    def close(self) -> None:
        # Decoders sit in a process-wide cache that a forked child inherits;
        # there the library is unusable, so closing is left to the owner.
        if getattr(self, "_pid", None) == os.getpid():
            super().close()


# Open decoders by config: decode() is called once per batch (mapInArrow),
# and opening one compiles or finds a module and starts an instance.
_CACHE_SIZE = 8
_cache: OrderedDict[str, NativeDecoder] = OrderedDict()
_cache_lock = threading.Lock()


def _usable(dec: NativeDecoder | None) -> bool:
    """dec is open, in this process (a forked child inherits the caches)."""
    return dec is not None and bool(dec._h) and dec._pid == os.getpid()


def _cached(config: DecoderConfig) -> NativeDecoder:
    key = config.to_json()
    with _cache_lock:
        dec = _cache.get(key)
        if _usable(dec):
            _cache.move_to_end(key)
            return dec
        dec = NativeDecoder(config)
        _cache[key] = dec
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)[1].close()
        return dec


# The decoder of each call's arguments, found without building its config
# again: decode() runs once per batch, and building a config (the schema
# serialized, the dataclass turned into JSON) costs a good part of a
# 1,000-row batch's decoding. Keyed by what the config is made of, as
# text where the object cannot be a key or would compare equal without
# being so (a pyarrow Schema with other metadata, a StructType, options
# given as dicts).
_by_args: dict[tuple, str] = {}


# The last call's arguments and decoder: a query calls decode() with the
# same arguments batch after batch, and comparing them (the schema by
# identity, so the entry holds it) is cheaper than building _by_args's key.
# Only arguments that cannot change in place take this path: a schema that
# is None, text or a pyarrow Schema, and options of plain values (a
# StructType or a dict option may be changed between calls).
_last: tuple | None = None
_SCALARS = (str, int, float, bool)


def _decoder_for(format: str | None, schema: Any, decoder: str | None, options: Mapping[str, Any],
                 timeout_ms: int, memory_limit_mb: int, engine: str) -> NativeDecoder:
    global _last
    cwd = os.getcwd() if decoder is not None and not os.path.isabs(decoder) else None
    same = (format, decoder, cwd, timeout_ms, memory_limit_mb, engine)
    last = _last
    if (last is not None and (last[0] is schema or (isinstance(schema, str) and last[0] == schema))
            and last[1] == same and last[2] == options and _usable(last[3])):
        return last[3]
    dec = _decoder_by_args(format, schema, decoder, options, timeout_ms, memory_limit_mb, engine)
    immutable = schema is None or isinstance(schema, (str, pa.Schema))
    if immutable and all(isinstance(v, _SCALARS) for v in options.values()):
        _last = (schema, same, dict(options), dec)
    return dec


def _decoder_by_args(format: str | None, schema: Any, decoder: str | None, options: Mapping[str, Any],
                     timeout_ms: int, memory_limit_mb: int, engine: str) -> NativeDecoder:
    if isinstance(schema, pa.Schema):  # == ignores metadata, which the config carries
        schema_key: Any = schema.to_string(show_field_metadata=True, show_schema_metadata=True)
    else:
        schema_key = schema if isinstance(schema, str) or schema is None else repr(schema)
    args = (format, type(schema).__name__, schema_key,
            None if decoder is None else os.path.abspath(decoder),
            tuple(sorted((k, v if isinstance(v, (str, int, float, bool)) else repr(v)) for k, v in options.items())),
            timeout_ms, memory_limit_mb, engine)
    key = _by_args.get(args)
    if key is not None:
        with _cache_lock:
            dec = _cache.get(key)
            if _usable(dec):
                _cache.move_to_end(key)
                return dec
    cfg = decoder_config(format, _arrow_schema(schema), decoder, options, timeout_ms=timeout_ms,
                         memory_limit_mb=memory_limit_mb, engine=engine)
    dec = _cached(cfg)
    if len(_by_args) >= 4 * _CACHE_SIZE:
        _by_args.clear()
    _by_args[args] = cfg.to_json()
    return dec


def decode(payloads: pa.Array | pa.ChunkedArray, format: str | None = None, schema: Any = None,
           decoder: str | None = None, *, on_error: str = "column", timeout_ms: int = DEFAULT_TIMEOUT_MS,
           memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB, engine: str = ENGINES[0], **options: Any) -> pa.RecordBatch:
    """Decodes a pyarrow array of payloads (binary or string) into a record
    batch, row i from payload i, on the native data plane.

    format: a built-in decoder, ``"json"`` (Spark ``from_json`` semantics,
    schema required) or ``"avro"`` (``from_avro``; option ``avro_schema``,
    the writer's schema as JSON text or a dict; the schema is derived from
    it when not given). decoder: instead, the path of a ``.wasm`` decoder
    module (docs/writing-a-decoder.md), run in a sandbox with a memory cap
    (``memory_limit_mb``) and a time limit per batch (``timeout_ms``), by
    the engine ``engine``: ``"auto"`` (default): wasmtime when the
    ``wasmtime`` package is installed (``pip install 'pubsub-go[wasm]'``),
    else wazero; or either by name. Same results and sandbox; wasmtime is
    faster.
    schema: the target, a ``pyarrow.Schema``, a Spark ``StructType`` or DDL
    text as ``from_json`` takes it (``"id BIGINT, tags ARRAY<STRING>"``).
    options: decoder options (``avro_schema``, ``timezone``...).

    on_error: what a payload that fails to decode gives: ``"column"``
    (default) a null row and its message in a last column
    ``__decode_error``; ``"null"`` a null row, as ``from_json`` does;
    ``"fail"`` an ``InvalidArgumentError`` naming the first failed rows
    (``"raise"``, its former spelling, still works and warns).
    A failure of the whole batch (time limit, memory cap, a crashed module)
    raises ``DeadlineExceededError``, ``ResourceExhaustedError`` or
    ``AbortedError``; the process carries on.
    """
    if on_error in RENAMED_ON_ERROR:
        warnings.warn(f"on_error={on_error!r} is now on_error={RENAMED_ON_ERROR[on_error]!r}, the word the "
                      "source's onDecodeError uses", DeprecationWarning, stacklevel=2)
        on_error = RENAMED_ON_ERROR[on_error]
    if on_error not in ON_ERROR:
        raise InvalidArgumentError.new(f"on_error={on_error!r}; expected one of {', '.join(ON_ERROR)}")
    if isinstance(payloads, pa.ChunkedArray):
        payloads = payloads.combine_chunks()
    if not isinstance(payloads, pa.Array):
        raise InvalidArgumentError.new("payloads must be a pyarrow Array of binary or string, "
                                       f"got {type(payloads).__name__}")
    batch = _decoder_for(format, schema, decoder, options, timeout_ms, memory_limit_mb, engine).decode(payloads)
    if on_error == "column":
        return batch
    errs = batch.column(DECODE_ERROR_COLUMN)
    if on_error == "fail" and errs.null_count < len(errs):
        bad = [(i, e) for i, e in enumerate(errs.to_pylist()) if e is not None]
        shown = "; ".join(f"row {i}: {e}" for i, e in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        raise InvalidArgumentError.new(f"{len(bad)} payload(s) failed to decode: {shown}{more}")
    return batch.drop_columns([DECODE_ERROR_COLUMN])
