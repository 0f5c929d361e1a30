"""Fixtures for the decoder tests: the .wasm modules are built from source
with the local Go toolchain (wasm-decoders/build.sh) once per session."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WASM_SRC = ROOT / "wasm-decoders"
WASM_OUT = ROOT / "python" / "pubsub_go" / "wasm"

# The package under test and this folder's helpers (vectorlib), whatever
# pytest's import mode.
for _p in (ROOT / "python", Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        pytest.skip("the Go toolchain is needed to build the decoder modules")
    return go


@pytest.fixture(scope="session")
def builtin_wasm() -> Path:
    """Builds json.wasm and avro.wasm into the package's wasm/ folder."""
    _go()
    subprocess.run(["bash", str(WASM_SRC / "build.sh")], check=True, timeout=600)
    return WASM_OUT


def build_guest(pkg: str, out_dir: Path) -> Path:
    """Builds a Go guest package of wasm-decoders (e.g. "examples/vpcflow")."""
    out = out_dir / (Path(pkg).name + ".wasm")
    env = dict(os.environ, GOOS="wasip1", GOARCH="wasm")
    subprocess.run(
        [_go(), "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", str(out), "./" + pkg],
        cwd=WASM_SRC, env=env, check=True, timeout=600,
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
