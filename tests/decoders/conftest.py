"""Fixtures for the decoder tests: the .wasm modules are built from source
once per session, into a temporary folder (tests/guests.py), so the tests
exercise the current guest code with the installed pubsub_go package's
host."""

import sys
from pathlib import Path

import pytest

from guests import build_guest

# This folder's helpers (vectorlib), whatever pytest's import mode.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def builtin_wasm(tmp_path_factory) -> Path:
    """Builds json.wasm and avro.wasm from source; returns their folder."""
    out = tmp_path_factory.mktemp("wasm-builtins")
    for name in ("json", "avro"):
        build_guest(f"cmd/{name}", out)
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
    """The C port of the example decoder (decoder ABI 2)."""
    return build_guest("examples/vpcflow-c/vpcflow.c", guest_dir)


@pytest.fixture(scope="session")
def badlayout_wasm(guest_dir) -> Path:
    """A decoder ABI 2 module with broken output layouts (test guest)."""
    return build_guest("internal/testguests/badlayout/badlayout.c", guest_dir)
