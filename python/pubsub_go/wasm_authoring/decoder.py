"""The wasmtime host's Decoder: a module (built-in or a user's) run on
batches of payloads, its instance replaced after a failed batch."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow as pa
import wasmtime

from .. import contract
from ..schema import MODULE_ERROR_COLUMN
from .abi import ABI_VERSION_2, decode_fields, encode_config, encode_input
from .errors import DecoderCrash, DecoderError, DecoderMemoryError, DecoderTimeout
from .instance import PAGE, Instance
from .layout import read_layout
from .runtime import TICK, get_runtime

# The built-in formats and the limits' defaults are the Go library's
# (_contract.json), so both hosts agree.
BUILTINS = tuple(contract.builtin_formats())
_DEFAULT_MEMORY_LIMIT_MB = contract.limit("decoder_config", "memory_limit_mb").default
_DEFAULT_TIMEOUT_S = contract.limit("decoder_config", "timeout_ms").default / 1000

_WASM_DIR = Path(__file__).resolve().parent.parent / "wasm"


def builtin_path(name: str) -> Path:
    """Path of a built-in decoder module ("json" or "avro": the built-ins with a .wasm build)."""
    if name not in BUILTINS:
        raise ValueError(f"unknown built-in decoder {name!r}; built-ins: {', '.join(BUILTINS)}")
    path = _WASM_DIR / f"{name}.wasm"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; build it with: bash wasm-decoders/build.sh (which builds the "
                                "built-ins that have a .wasm build; protobuf runs natively only: use "
                                "pubsub_go.decode(format='protobuf'))")
    return path


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
        memory_limit_mb: int = _DEFAULT_MEMORY_LIMIT_MB,
        timeout: float = _DEFAULT_TIMEOUT_S,
    ) -> None:
        if isinstance(wasm, (bytes, bytearray)):
            code = bytes(wasm)
        else:
            path = builtin_path(wasm) if isinstance(wasm, str) and wasm in BUILTINS else Path(wasm)
            code = path.read_bytes()
        if memory_limit_mb <= 0 or timeout <= 0:
            raise ValueError("memory_limit_mb and timeout must be positive")
        self._rt = get_runtime()
        try:
            self._module = self._rt.module(code)
        except wasmtime.WasmtimeError as e:
            raise DecoderError(f"invalid WebAssembly module: {e}") from e
        self._target = schema
        self._options = dict(options or {})
        self._memory_limit = memory_limit_mb * 1024 * 1024
        self._timeout = timeout
        self._lock = threading.Lock()
        self._inst: Instance | None = None
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

    def _instance(self) -> Instance:
        if self._inst is None:
            inst = self._guard(
                lambda: Instance(self._rt, self._module, self._memory_limit, self._ticks()), None
            )
            try:
                config = encode_config(self._target, self._options, inst.abi)
                self._guard(lambda: inst.call("pg_init", config), inst)
                if inst.abi == ABI_VERSION_2:
                    out = self._guard(lambda: inst._read_packed(inst.exports["pg_schema"](inst.store)), inst)
                    fields = list(self._target) if self._target is not None else decode_fields(memoryview(out))[0]
                    inst.v2_schema = pa.schema(fields, metadata=self._target.metadata if self._target else None)
            except DecoderError:
                inst.close()
                raise
            self._inst = inst
        return self._inst

    def _ticks(self) -> int:
        return max(1, int(self._timeout / TICK) + 1)

    def _guard(self, fn, inst: Instance | None):
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

    def _crash(self, inst: Instance | None, msg: str) -> DecoderError:
        tail = inst.stderr_head() if inst is not None else ""
        if inst is not None and inst.memory is not None:
            used = inst.memory.data_len(inst.store)
            if "out of memory" in tail or used + 16 * PAGE > self._memory_limit:
                return DecoderMemoryError(
                    f"decoder exceeded the memory limit of {self._memory_limit >> 20} MiB ({msg})"
                )
        return DecoderCrash(msg + (f": {tail}" if tail else ""))

    def decode(
        self, payloads: pa.Array | pa.ChunkedArray | Iterable[bytes]
    ) -> tuple[pa.RecordBatch, pa.Array]:
        """Decodes one batch. Returns the decoded rows and a utf8 array of
        per-row errors (null for rows that decoded)."""
        data = encode_input(payloads)
        with self._lock:
            if self._closed:
                raise DecoderError("decoder is closed")
            inst = self._instance()
            try:
                out = self._guard(lambda: inst.call("pg_decode", data), inst)
                if inst.abi == ABI_VERSION_2:
                    return read_layout(inst, out)
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
