"""Shared fixtures: Google's official emulator (one per session, plus fresh
ones for fault tests), Google's own Python client as the outside peer, and
unique topic/subscription names per test."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Google's Python client (the outside peer) keeps gRPC channels and threads in
# this process, and the tests start processes from it (Spark's JVM gateway,
# emulators) with preexec_fn. With gRPC's fork support on, its fork handler
# can kill such a child between fork and exec (grpc/grpc#43055: "epoll_wait
# error: Bad file descriptor", then PySpark's JAVA_GATEWAY_EXITED). Nothing
# here forks and goes on using gRPC in the child, so the support is off; it
# is read when grpc is first imported, which is after this.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from emulators import OfficialEmulator  # noqa: E402
from expected_skips import unexpected  # noqa: E402
from google_peer import PROJECT, GoogleClients  # noqa: E402, F401

_SKIPS: list[tuple[str, str]] = []  # (test, reason) of every skip this run


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPS.append((report.nodeid, reason))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    bad = [(node, reason) for node, reason in _SKIPS if unexpected(reason)]
    terminalreporter.write_line(f"skips: {len(_SKIPS)} ({len(_SKIPS) - len(bad)} expected: tests/expected_skips.py)")
    for node, reason in bad:
        terminalreporter.write_line(f"unexpected skip: {node}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A skip nobody expected means a test stopped running unnoticed: in
    # strict mode (CI) that fails the run.
    if os.environ.get("PUBSUB_GO_STRICT_SKIPS") == "1" and exitstatus == 0:
        if any(unexpected(reason) for _, reason in _SKIPS):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
