"""The test build of libpubsubgo: `go build -tags pubsubgo_debug`, which
also exports the test hooks of go/include/pubsubgo_debug.h (a Go panic on
request, the live C memory of exported batches). The release library does
not carry them (scripts/check_wheel.py fails a wheel that does).

A test that needs a hook builds this library once per session (`build`,
~10 s with a warm Go build cache) and runs its code in a fresh interpreter
that loads it (`run`): one Go runtime per process, and the test process
may have loaded the release library already. That code calls the hooks
through `debug_panic` and `debug_c_bytes` below."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEBUG_HEADER = REPO / "go" / "include" / "pubsubgo_debug.h"
TAG = "pubsubgo_debug"


def build(dest: Path) -> Path:
    """Builds the test library into dest with the toolchain setup.py uses."""
    sys.path.insert(0, str(REPO / "build_support"))
    import pubsub_go_toolchain as toolchain

    try:
        tc = toolchain.select()
    except toolchain.ToolchainError as e:
        pytest.skip(f"no Go toolchain to build the test library: {e}")
    lib = dest / "libpubsubgo.so"
    subprocess.run([tc.go, "build", f"-tags={TAG}", "-buildmode=c-shared", "-trimpath", "-o", str(lib), "./go/capi"],
                   cwd=REPO, env=tc.env, check=True, timeout=600)
    return lib


def run(lib: Path, code: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Runs code in a fresh interpreter whose pubsub_go loads lib; the tests
    directory is on its path (emulators, this module)."""
    prelude = f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
    env = {**os.environ, "PUBSUB_GO_LIBRARY": str(lib)}
    return subprocess.run([sys.executable, "-c", prelude + code], env=env, capture_output=True, text=True,
                          timeout=timeout)


_declared = False


def _lib():
    global _declared
    from pubsub_go import _native

    if not _declared:
        _native.declare(DEBUG_HEADER)
        _declared = True
    return _native.lib()


def debug_panic() -> None:
    """Makes Go panic inside an exported call (it must come back as 13 INTERNAL)."""
    from pubsub_go import _native

    err = _native.new_error()
    _native.check(_lib().pg_debug_panic(err), err)


def debug_c_bytes() -> int:
    """Bytes of C memory held by exported Arrow batches, now."""
    return int(_lib().pg_debug_c_bytes())
