"""Where wasmtime's C library is: ``_libwasmtime.so`` inside the installed
``wasmtime`` package, which the Go decoder host loads at run time for its
wasmtime engine (``engine="wasmtime"``; go/internal/decode/wasmtime).
Found without importing ``wasmtime`` (that would load the library through
ctypes for nothing)."""

from __future__ import annotations

import functools
import importlib.util
import platform
import sys
from pathlib import Path

__all__ = ["find"]

# The wasmtime wheel's directory per machine (its _ffi.py's naming).
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


@functools.cache  # pubsub_go.decode asks on every call (its default engine is "auto")
def find() -> str | None:
    """The library's path, or None without a wasmtime package for this machine."""
    spec = importlib.util.find_spec("wasmtime")
    if spec is None or not spec.submodule_search_locations:
        return None
    machine = _MACHINES.get(platform.machine().lower())
    if machine is None or not sys.platform.startswith("linux"):
        return None
    lib = Path(next(iter(spec.submodule_search_locations))) / f"linux-{machine}" / "_libwasmtime.so"
    return str(lib) if lib.is_file() else None
