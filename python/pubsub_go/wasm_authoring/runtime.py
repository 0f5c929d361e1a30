"""The wasmtime engine of the decoder host: one per process, with its
cache of compiled modules and the ticker that enforces time limits."""

from __future__ import annotations

import hashlib
import threading
import time

import wasmtime

TICK = 0.01  # epoch tick, seconds


class Runtime:
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
            time.sleep(TICK)


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> Runtime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = Runtime()
        return _runtime
