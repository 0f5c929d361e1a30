"""Shared fixtures: Google's official emulator (one per session, plus fresh
ones for fault tests), Google's own Python client as the outside peer, and
unique topic/subscription names per test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from emulators import OfficialEmulator  # noqa: E402
from google_peer import PROJECT, GoogleClients  # noqa: E402, F401


@pytest.fixture(scope="session")
def emulator() -> Iterator[OfficialEmulator]:
    emu = OfficialEmulator()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture()
def fresh_emulator() -> Iterator[OfficialEmulator]:
    """A private emulator for tests that stop or restart it."""
    emu = OfficialEmulator()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture(scope="session")
def google(emulator: OfficialEmulator) -> GoogleClients:
    return GoogleClients(emulator.host_port)
