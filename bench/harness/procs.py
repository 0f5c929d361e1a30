"""Process plumbing: building the Go parts, the load server, and running a
peer in its own process with a bound on its time and its resource usage
taken from wait4(2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / "bench" / "peers"


@dataclass
class Build:
    """Binaries and the c-shared library built from this tree into a temp dir."""

    dir: Path
    loadserver: Path
    goreceive: Path
    gopublish: Path
    lib: Path

    @staticmethod
    def make(lib: str | None = None) -> Build:
        d = Path(tempfile.mkdtemp(prefix="pubsub-go-bench-"))
        b = Build(d, d / "loadserver", d / "goreceive", d / "gopublish", Path(lib) if lib else d / "libpubsubgo.so")
        steps = [["go", "build", "-o", str(b.loadserver), "./bench/loadserver"],
                 ["go", "build", "-o", str(b.goreceive), "./bench/peers/goreceive"],
                 ["go", "build", "-o", str(b.gopublish), "./bench/peers/gopublish"]]
        if not lib:
            steps.append(["go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w",
                          "-o", str(b.lib), "./go/capi"])
        for cmd in steps:
            r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
        return b

    def env(self) -> dict[str, str]:
        """Environment for every Python peer (and Spark's workers): this
        tree's package and library, and the bench sources."""
        pp = [str(REPO / "python"), str(PEERS)]
        if os.environ.get("PYTHONPATH"):
            pp.append(os.environ["PYTHONPATH"])
        return {**os.environ, "PYTHONPATH": os.pathsep.join(pp), "PUBSUB_GO_LIBRARY": str(self.lib)}


class LoadServer:
    """bench/loadserver on loopback; stopped by its own pid."""

    def __init__(self, build: Build, payload_bytes: int, attributes: int = 2, *extra: str) -> None:
        self.payload_bytes = payload_bytes
        self.proc = subprocess.Popen(
            [str(build.loadserver), "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0",
             "--payload-bytes", str(payload_bytes), "--attributes", str(attributes), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines = _read_lines(self.proc, 2, timeout=30)
        if len(lines) < 2 or not lines[0].startswith("listening on "):
            self.stop()
            raise RuntimeError(f"loadserver did not start: {lines!r}")
        self.host = lines[0].removeprefix("listening on ").strip()
        self.http = lines[1].removeprefix("http on ").strip()
        self.cpu0 = self.cpu_seconds()

    def stats(self) -> dict:
        with urllib.request.urlopen(f"http://{self.http}/stats", timeout=10) as r:
            return json.loads(r.read())

    def cpu_seconds(self) -> float:
        """User+system CPU of the server so far (from /proc)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        if self.proc.stdout:
            self.proc.stdout.close()


def _read_lines(proc: subprocess.Popen, n: int, timeout: float) -> list[str]:
    out: list[str] = []

    def read() -> None:
        for _ in range(n):
            line = proc.stdout.readline()
            if not line:
                return
            out.append(line)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout)
    return out


@dataclass
class PeerResult:
    data: dict
    max_rss_mb: float  # peak resident set of the peer process (VmHWM, see run_peer)
    cpu_total: float  # user+system CPU of the whole process life
    wall: float
    stderr: str = field(repr=False, default="")


def run_peer(cmd: list[str], env: dict[str, str], timeout: float) -> PeerResult:
    """Runs cmd, which prints one JSON line last; kills it after timeout.
    Reaped with wait4 so its CPU is its own. Its peak RSS is read from
    /proc/PID/status VmHWM while it runs, not from wait4: Linux carries
    ru_maxrss across execve, so a peer forked from a large driver (Spark's,
    ~125 MB) would report the driver's size as its own floor."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=REPO, start_new_session=True)
        timer = threading.Timer(timeout, lambda: _kill_group(p.pid))
        timer.start()
        hwm = _HighWater(p.pid)
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
            hwm.stop()
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    lines = [ln for ln in stdout.splitlines() if ln.strip().startswith("{")]
    if p.returncode != 0 or not lines:
        what = "timed out" if wall >= timeout else f"exited {p.returncode}"
        raise RuntimeError(f"{os.path.basename(cmd[1] if cmd[0] == sys.executable else cmd[0])} {what}: "
                           f"{stderr[-2000:] or stdout[-2000:]}")
    return PeerResult(json.loads(lines[-1]), hwm.last_mb or ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime, wall,
                      stderr)


class _HighWater:
    """Polls VmHWM (peak RSS of the process image, reset by execve) every
    0.1 s; the last reading, taken within 0.1 s of the exit, is the peak."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.last_mb = 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            self.last_mb = int(line.split()[1]) / 1024
            except OSError:
                return

    def stop(self) -> None:
        self._stop.set()
        self._t.join(timeout=2)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the peer's own session: exactly it and its children
    except ProcessLookupError:
        pass


def py(script: str, *args: str) -> list[str]:
    return [sys.executable, str(PEERS / script), *args]


def create(build: Build, server: LoadServer, topic: str, subscriptions: list[str]) -> None:
    """Creates a topic and its subscriptions through pubsub_go's admin, in
    a child process (the harness is also the Spark driver)."""
    r = run_peer(py("pgadmin.py", "--emulator-host", server.host, "--topic", topic,
                    "--subscriptions", ",".join(subscriptions)), build.env(), timeout=120)
    if r.data.get("created") != len(subscriptions):
        raise RuntimeError(f"admin created {r.data} of {len(subscriptions)} subscriptions")
