"""Builds decoder modules for the tests from the wasm-decoders sources, with
the builder the Go tests use too (wasm-decoders/build-guest.sh): Go
packages with the local Go toolchain, C files with zig's clang from the
ziglang package (a test dependency)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

WASM_SRC = Path(__file__).resolve().parents[1] / "wasm-decoders"


def build_guest(src: str, out_dir: Path) -> Path:
    """Builds src (a Go package such as "examples/vpcflow", or a C file such
    as "examples/vpcflow-c/vpcflow.c", under wasm-decoders) into out_dir."""
    name = Path(src).name
    if name.endswith(".c"):
        name = name[:-2] + "_c"
    elif shutil.which("go") is None:
        pytest.skip("the Go toolchain is needed to build the decoder modules")
    out = out_dir / f"{name}.wasm"
    env = dict(os.environ, ZIG=f"{sys.executable} -m ziglang")
    subprocess.run(["bash", str(WASM_SRC / "build-guest.sh"), str(out), src], env=env, check=True, timeout=600)
    return out
