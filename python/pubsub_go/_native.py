"""Loads libpubsubgo lazily through cffi (ABI mode).

The Go runtime must not be loaded before a fork(): PySpark forks its Python
workers from a daemon, and a Go runtime inherited across fork() is unusable
in the child. So nothing here runs at import time; `lib()` loads the
library on first use in the process that calls it, and refuses, with a
clear error, to be used from a forked child of the process that loaded it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import cffi

from .errors import ForkedProcessError, error_for

_LIB_DIR = Path(__file__).resolve().parent / "_lib"
_HEADER = "pubsubgo.h"
_LIBNAME = "libpubsubgo.so"

_lock = threading.Lock()
_ffi: cffi.FFI | None = None
_lib: Any = None
_loaded_pid: int | None = None


def _header_path() -> Path:
    for cand in (_LIB_DIR / _HEADER, Path(__file__).resolve().parents[2] / "go" / "include" / _HEADER):
        if cand.exists():
            return cand
    raise FileNotFoundError(f"{_HEADER} not found next to the library in {_LIB_DIR}")


def library_path() -> Path:
    override = os.environ.get("PUBSUB_GO_LIBRARY")
    path = Path(override) if override else _LIB_DIR / _LIBNAME
    if not path.exists():
        raise FileNotFoundError(
            f"libpubsubgo not found at {path}; install the package with `pip install .` "
            "(it builds the library with Go) or set PUBSUB_GO_LIBRARY to a built libpubsubgo.so"
        )
    return path


def _cdef_source(text: str) -> str:
    # cffi parses no preprocessor lines; the header keeps to plain C otherwise.
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def ffi() -> cffi.FFI:
    global _ffi
    if _ffi is None:
        f = cffi.FFI()
        f.cdef(_cdef_source(_header_path().read_text()))
        _ffi = f
    return _ffi


def declare(header: Path) -> None:
    """Adds the declarations of another header of the library's: the test
    hooks of go/include/pubsubgo_debug.h, which only a library built with
    -tags pubsubgo_debug exports (tests/native_debug.py). The package's own
    header never declares them, so the release library is never asked for
    them."""
    ffi().cdef(_cdef_source(header.read_text()))


def is_loaded() -> bool:
    """True if the Go runtime is loaded in this process (used by tests)."""
    return _lib is not None and _loaded_pid == os.getpid()


def lib() -> Any:
    """The loaded library, loading it on first use in this process."""
    global _lib, _loaded_pid
    pid = os.getpid()
    if _lib is not None:
        if _loaded_pid != pid:
            raise ForkedProcessError(
                f"libpubsubgo was loaded in process {_loaded_pid} and this is its forked child {pid}: "
                "a Go runtime does not survive fork(). Load pubsub_go's native objects only in the "
                "process that uses them (create Subscriber/Publisher after the fork)."
            )
        return _lib
    with _lock:
        if _lib is None:
            f = ffi()
            _lib = f.dlopen(str(library_path()))
            _loaded_pid = pid
    return _lib


def check(rc: int, err: Any) -> None:
    """Raises the exception for a non-zero status from the typed reason in
    err (a struct PgError*), releasing its message."""
    if rc == 0:
        return
    f = ffi()
    kind = f.string(err.kind).decode("ascii", "replace")
    msg = "unknown error"
    if err.message != f.NULL:
        msg = f.string(err.message).decode("utf-8", "replace")
    lib().pg_error_release(err)
    raise error_for(rc, msg, kind)


def new_error() -> Any:
    """A zeroed struct PgError for the err argument of a call."""
    return ffi().new("struct PgError*")


def call(fn_name: str, *args: Any) -> None:
    """Calls fn(*args, struct PgError* err) and raises on failure."""
    err = new_error()
    rc = getattr(lib(), fn_name)(*args, err)
    check(rc, err)


def take_string(p: Any) -> str:
    """Reads and frees a char* returned by the library."""
    f = ffi()
    if p == f.NULL:
        return ""
    try:
        return f.string(p).decode("utf-8")
    finally:
        lib().pg_free(p)
