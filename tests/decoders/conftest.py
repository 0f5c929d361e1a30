"""Fixtures for the decoder tests: the .wasm modules are built from source
with the local Go toolchain (wasm-decoders/build.sh) once per session, into
a temporary folder, so the tests exercise the current guest code with the
installed pubsub_go package's host."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WASM_SRC = ROOT / "wasm-decoders"

# This folder's helpers (vectorlib), whatever pytest's import mode.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        pytest.skip("the Go toolchain is needed to build the decoder modules")
    return go


@pytest.fixture(scope="session")
def builtin_wasm(tmp_path_factory) -> Path:
    """Builds json.wasm and avro.wasm from source; returns their folder."""
    _go()
    out = tmp_path_factory.mktemp("wasm-builtins")
    subprocess.run(["bash", str(WASM_SRC / "build.sh"), str(out)], check=True, timeout=600)
    return out


def build_guest(pkg: str, out_dir: Path) -> Path:
    """Builds a Go guest package of wasm-decoders (e.g. "examples/vpcflow")."""
    out = out_dir / (Path(pkg).name + ".wasm")
    env = dict(os.environ, GOOS="wasip1", GOARCH="wasm")
    subprocess.run(
        [_go(), "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", str(out), "./" + pkg],
        cwd=WASM_SRC,
        env=env,
        check=True,
        timeout=600,
    )
    return out


@pytest.fixture(scope="session")
def guest_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("wasm-guests")


@pytest.fixture(scope="session")
def hostile_wasm(guest_dir) -> Path:
    return build_guest("internal/testguests/hostile", guest_dir)


@pytest.fixture(scope="session")
def vpcflow_wasm(guest_dir) -> Path:
    return build_guest("examples/vpcflow", guest_dir)


@pytest.fixture(scope="session")
def vpcflow_c_wasm(guest_dir) -> Path:
    """The C port of the example decoder (decoder ABI 2), built with zig's
    clang from the ziglang package (a test dependency)."""
    out = guest_dir / "vpcflow_c.wasm"
    env = dict(os.environ, ZIG=f"{sys.executable} -m ziglang")
    subprocess.run(["bash", str(WASM_SRC / "build-c.sh"), str(out), str(WASM_SRC / "examples/vpcflow-c/vpcflow.c")],
                   env=env, check=True, timeout=600)
    return out


@pytest.fixture(scope="session")
def badlayout_wasm(guest_dir) -> Path:
    """A decoder ABI 2 module with broken output layouts (test guest)."""
    out = guest_dir / "badlayout.wasm"
    env = dict(os.environ, ZIG=f"{sys.executable} -m ziglang")
    subprocess.run(["bash", str(WASM_SRC / "build-c.sh"), str(out), "--no-sdk",
                    str(WASM_SRC / "internal/testguests/badlayout/badlayout.c")], env=env, check=True, timeout=600)
    return out
