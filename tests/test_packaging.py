"""`pip install .` builds a platform wheel that carries the Go library and
the built-in WASM decoders; users never set LD_LIBRARY_PATH."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
C_ABI = 6  # go/capi/main.go ABIVersion: raised with each incompatible change of pubsubgo.h


def _check_wheel():
    spec = importlib.util.spec_from_file_location("check_wheel", REPO / "scripts" / "check_wheel.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.timeout(900)
def test_wheel_is_a_platform_wheel_with_the_library(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-w", str(tmp_path), "-q"],
        capture_output=True, text=True, timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    wheels = list(tmp_path.glob("pubsub_go-*.whl"))
    assert len(wheels) == 1, wheels
    name = wheels[0].name
    assert "none-any" not in name and "linux" in name, f"{name} is not a platform wheel"
    names = zipfile.ZipFile(wheels[0]).namelist()
    for want in ("pubsub_go/_lib/libpubsubgo.so", "pubsub_go/_lib/pubsubgo.h", "pubsub_go/_contract.json",
                 "pubsub_go/_options.json", "pubsub_go/wasm/json.wasm",
                 "pubsub_go/wasm/avro.wasm", "pyspark_pubsub_go.py"):
        assert want in names, f"{want} missing from {name}"
    # The release checks hold for a developer's build too: glibc-only imports,
    # the decoders inside, the ELF machine its tag names.
    problems, facts = _check_wheel().check(wheels[0])
    assert problems == [], f"{facts}: {problems}"


def test_version_command_reports_package_library_and_go_versions():
    from pubsub_go import __version__

    out = subprocess.run([sys.executable, "-m", "pubsub_go", "version", "--json"], capture_output=True, text=True,
                         timeout=120, cwd="/")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    lib = info["library"]
    assert info["package"] == __version__ == lib["version"], info  # one version, stamped into the library
    assert lib["go"].startswith("go1.") and lib["abi"] == C_ABI, lib
    assert lib["modules"]["arrow_go"].startswith("v18.") and lib["modules"]["wazero"].startswith("v1."), lib


def test_installed_library_loads_without_ld_library_path():
    code = "from pubsub_go.client import version; print(version()['abi'])"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                         cwd="/")
    assert out.stdout.strip() == str(C_ABI), out.stderr
