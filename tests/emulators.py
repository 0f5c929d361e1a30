"""Starts Google's official Pub/Sub emulator (and bench/loadserver) on a
free loopback port and stops it by its own pid (process group), for tests
and benchmarks; sets up a topic with messages on either."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

OFFICIAL = "/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


class OfficialEmulator:
    """One running cloud-pubsub-emulator (Java) on 127.0.0.1."""

    def __init__(self, startup_timeout: float = 90.0) -> None:
        binary = os.environ.get("PUBSUB_EMULATOR_BIN", OFFICIAL)
        if not Path(binary).exists():
            raise FileNotFoundError(f"Google's Pub/Sub emulator is not installed at {binary}")
        self.port = free_port()
        self.host_port = f"127.0.0.1:{self.port}"
        self._dir = tempfile.mkdtemp(prefix="pubsub-emulator-")
        self._log = open(Path(self._dir) / "emulator.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [binary, "--host=127.0.0.1", f"--port={self.port}"],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=self._dir,
            start_new_session=True,  # its own process group: stop() kills exactly it and its java child
        )
        if not wait_for_port("127.0.0.1", self.port, startup_timeout) or self.proc.poll() is not None:
            log = self.log_tail()
            self.stop()
            raise RuntimeError(f"official emulator did not start on {self.host_port}:\n{log}")

    def cut_call_times(self) -> list[str]:
        """The log's time of each call this emulator failed to let go since
        it started: each cancelled by its client (an HTTP/2 RST_STREAM, not
        a half-close) logs a NoSuchMethodError whose stack has a frame
        `...closedInternal(` (one log entry each, however many frames name
        it), and a StreamingPull stream cut so is kept and leased to
        (docs/source.md)."""
        entries = re.split(r"\n(?=[A-Z][a-z]{2} \d{1,2}, \d{4} )", self.log_tail(1 << 30))
        return [e.split("\n", 1)[0] for e in entries if ".closedInternal(" in e]

    def log_tail(self, n: int = 4000) -> str:
        try:
            return (Path(self._dir) / "emulator.log").read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def kill(self) -> None:
        """Hard stop (fault injection); the port stays the same for restart()."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)

    def restart(self, startup_timeout: float = 90.0) -> None:
        binary = os.environ.get("PUBSUB_EMULATOR_BIN", OFFICIAL)
        self.proc = subprocess.Popen(
            [binary, "--host=127.0.0.1", f"--port={self.port}"],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=self._dir, start_new_session=True,
        )
        if not wait_for_port("127.0.0.1", self.port, startup_timeout):
            raise RuntimeError(f"official emulator did not restart on {self.host_port}:\n{self.log_tail()}")


REPO = Path(__file__).resolve().parent.parent


def go_binary(package: str) -> Path:
    """Builds a Go main package of this repo (e.g. "./bench/loadserver") once
    per test session and returns the binary."""
    if package not in _BINARIES or not _BINARIES[package].exists():
        out = Path(tempfile.mkdtemp(prefix="pubsub-go-bin-")) / Path(package).name
        subprocess.run(["go", "build", "-o", str(out), package], cwd=REPO, check=True, timeout=600)
        _BINARIES[package] = out
    return _BINARIES[package]


_BINARIES: dict[str, Path] = {}


class LoadServer:
    """bench/loadserver: a line-rate Pub/Sub server of synthetic messages (a
    generated load, not a reference for behaviour), built from this repo."""

    @staticmethod
    def build() -> Path:
        return go_binary("./bench/loadserver")

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([str(self.build()), "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = self.proc.stdout.readline().strip()
        second = self.proc.stdout.readline().strip()
        if not first.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"loadserver did not start: {first!r}")
        self.host_port = first.removeprefix("listening on ")
        self.http = second.removeprefix("http on ")

    def stats(self) -> dict:
        import json
        import urllib.request

        with urllib.request.urlopen(f"http://{self.http}/stats", timeout=10) as r:
            return json.loads(r.read())

    @staticmethod
    def settled(st: dict) -> int:
        """How many messages a stats snapshot shows acked: ack ids that
        matched an outstanding lease. `acks` alone also counts ids that
        matched nothing (an expired lease's, or those of a batch-log entry
        replayed after its messages were redelivered), so it reaches the
        message count before every message is read."""
        return st["acks"] - st["ack_misses"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)


def topic_with_messages(host_port: str, project: str, payloads: list[bytes], **subscription: object) -> str:
    """Creates projects/<project>/topics/t and its subscription .../s (with
    the given create_subscription fields) on a server, publishes payloads,
    and returns the subscription's name."""
    import pyarrow as pa

    from pubsub_go.client import Publisher, admin

    topic, sub = f"projects/{project}/topics/t", f"projects/{project}/subscriptions/s"
    admin("create_topic", emulator_host=host_port, topic=topic)
    admin("create_subscription", emulator_host=host_port, topic=topic, subscription=sub, **subscription)
    with Publisher(topic=topic, emulator_host=host_port) as pub:
        pub.publish(pa.record_batch({"payload": pa.array(payloads)}))
        pub.flush(timeout_ms=30_000)
    return sub
