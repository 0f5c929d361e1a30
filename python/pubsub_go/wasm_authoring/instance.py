"""One instantiated decoder module in its wasmtime store: the sandbox (no
arguments, environment, files; stderr to a private file) and the calls
into it."""

from __future__ import annotations

import os
import tempfile

import wasmtime

from .abi import ABI_VERSION, ABI_VERSION_2
from .errors import DecoderCrash, DecoderError, DecoderMemoryError
from .runtime import Runtime

EXPORTS = (
    "memory",
    "pg_abi_version",
    "pg_alloc",
    "pg_free",
    "pg_init",
    "pg_decode",
    "pg_output",
    "pg_error",
)
PAGE = 65536


class Instance:
    """One instantiated module with its store (not thread-safe)."""

    def __init__(self, rt: Runtime, module: wasmtime.Module, memory_limit: int, ticks: int) -> None:
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
            missing = [n for n in EXPORTS if n not in ex]
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
