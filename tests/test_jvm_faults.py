"""The JVM front end's source (jvm/, docs/jvm.md) under faults, on PySpark
3.5.7 and 4.3 with the jar: the whole driver SIGKILLed while a
micro-batch's tasks pull and the query restarted on its checkpoint; an
executor JVM SIGKILLed mid-task in Spark's local-cluster mode (separate
executor JVMs); the subscriber's connections cut mid-read. Each ends with
every message in the parquet sink exactly once and nothing left unacked.

The kill tests run against bench/loadserver, paced (--rate) so each task
pulls for seconds and a kill lands inside one, and whose /stats show what
is outstanding, expired and acked: Google's emulator keeps a killed
stream's messages leased to nobody (docs/source.md, "End of backlog"), so
nothing a killed process held would come back there. The cut test runs
there too, through tests/cutproxy.py: a cut connection is a dead stream to
the server, and Google's emulator leases to dead streams as it does to a
killed process's. At the end Google's client pulls from the same server
and must find nothing unacked."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cutproxy import CutProxy
from emulators import LoadServer
from jvm_front_end import VERSIONS, python_for

pytestmark = pytest.mark.timeout(600)

FAULT_JOB = Path(__file__).resolve().parent / "jvm" / "fault_job.py"
SUB = "projects/d/subscriptions/s"
PARTS = 2
# Each task waits up to 3 s to fill a batch at the paced rate (10 msg/s),
# so it pulls for ~3 s: a kill soon after the batch is planned lands inside
# its tasks. Each kill lands in the first micro-batch of its run, which
# reads the backlog that built up while Spark started (a run takes ~50 s to
# start on a loaded machine): by the next, every message may be read.
PACED = {"numPartitions": PARTS, "maxWaitTimeMs": 3000, "batchSize": 1000, "ackDeadlineSeconds": 10}


@pytest.fixture(scope="module")
def jar() -> str:
    import pubsub_go

    return pubsub_go.jar_path()


class FaultJob:
    """tests/jvm/fault_job.py in its own process group (so the driver's
    Python and its JVM die together), its stdout lines collected."""

    def __init__(self, line: str, spec: dict, tmp: Path) -> None:
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env["PYSPARK_PYTHON"] = python_for(line)
        self.log = tmp / f"job-{time.monotonic_ns()}.log"
        self._err = open(self.log, "w")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen([python_for(line), str(FAULT_JOB), json.dumps(spec)],
                                     stdout=subprocess.PIPE, stderr=self._err, text=True, env=env,
                                     cwd=str(tmp), start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def rows(self) -> int:
        return sum(int(x.rsplit("rows=", 1)[1]) for x in list(self.lines) if x.startswith("batch "))

    def tail(self) -> str:
        return "\n".join(self.lines[-20:]) + "\n" + self.log.read_text()[-5000:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.wait(30)

    def wait(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout=timeout)
        finally:
            self._reader.join(timeout=10)
            self._err.close()

    def result(self, timeout: float = 180) -> dict:
        self.wait(timeout)
        found = [x for x in self.lines if x.startswith("RESULT ")]
        assert found and "clean exit" in self.lines, f"job failed (exit {self.proc.returncode}):\n{self.tail()}"
        return json.loads(found[-1][len("RESULT "):])


def spec(jar: str, host: str, sub: str, tmp: Path, **extra) -> dict:
    return {"jar": jar, "emulator": host, "subscription": sub, "out": str(tmp / "out"),
            "checkpoint": str(tmp / "ck"), "stop_file": str(tmp / "stop"), "timeout": 400, **extra}


def batch_in_flight(ckpt: Path) -> int | None:
    """The micro-batch planned (its offsets written) but neither committed
    nor fully recorded (not every task's batch-log entry published)."""
    offsets = {int(p.name) for p in (ckpt / "offsets").glob("[0-9]*")}
    commits = {int(p.name) for p in (ckpt / "commits").glob("[0-9]*")}
    for b in sorted(offsets - commits):
        # The source's checkpoint location is the query's sources/0.
        if len(list((ckpt / "sources" / "0" / "pubsub-go-batchlog" / str(b)).glob("part-*"))) < PARTS:
            return b
    return None


# How long a wait may take before the test calls it a hang: it includes a Spark application's start, which
# takes minutes on a 2-core machine running other Spark applications, and stays under pytest's 900 s a test.
HANG_S = 420


def wait_for(cond, timeout: float, what: str, job: FaultJob | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if job is not None:
            assert job.alive(), f"the job ended while waiting for {what}:\n{job.tail()}"
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s" + (
            f":\n{job.tail()}" if job else "")
        time.sleep(0.05)


def loadserver_and_subscription(n: int, rate: float) -> LoadServer:
    from pubsub_go.client import admin

    server = LoadServer("--messages", str(n), "--payload-bytes", "100", "--rate", str(rate))
    admin("create_topic", emulator_host=server.host_port, topic="projects/d/topics/t")
    admin("create_subscription", emulator_host=server.host_port, topic="projects/d/topics/t", subscription=SUB)
    return server


def google_pull_finds_nothing(host: str, sub: str) -> int:
    """How many messages Google's client can still pull (unacked) at host."""
    from google.api_core.exceptions import DeadlineExceeded

    from google_peer import GoogleClients

    before = os.environ.get("PUBSUB_EMULATOR_HOST")
    try:
        # One Pull: any unacked message comes back; with none, a server that
        # holds an empty Pull until its deadline (the load server, Google's
        # emulator) ends it with DEADLINE_EXCEEDED.
        resp = GoogleClients(host).subscriber.pull(request={"subscription": sub, "max_messages": 1000},
                                                   timeout=5.0)
        return len(resp.received_messages)
    except DeadlineExceeded:
        return 0
    finally:
        if before is None:
            os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        else:
            os.environ["PUBSUB_EMULATOR_HOST"] = before


def kill_mid_batch(job: FaultJob, ckpt: Path, server: LoadServer, rng: random.Random, killer) -> tuple:
    """Waits for a micro-batch to be planned with its tasks holding
    messages (the first one of a run reads the backlog that built up while
    Spark started: a restarted run's first re-runs the batch the kill
    interrupted); kills (killer()) a moment later. Returns the batch in
    flight before and after the kill and the server's stats at the kill."""
    deadline = time.monotonic() + 240

    def pulling() -> bool:
        # This run's tasks are pulling: its query started and it has streams
        # open (a killed run's streams end with it; its leases, counted in
        # outstanding, lapse only after ackDeadlineSeconds).
        return "started" in job.lines and server.stats()["streams_active"] > 0

    while True:  # a batch may end in the moment waited: then the next one
        wait_for(lambda: batch_in_flight(ckpt) is not None and pulling(), HANG_S, "micro-batch pulling", job)
        wait_for(lambda: server.stats()["outstanding"] > 0, 60, "task holding messages", job)
        planned = batch_in_flight(ckpt)
        time.sleep(rng.uniform(0.2, 0.8))
        before, st = batch_in_flight(ckpt), server.stats()
        if before is not None and before == planned and st["outstanding"] > 0 and st["streams_active"] > 0:
            break
        assert time.monotonic() < deadline, f"no kill time found inside a micro-batch's tasks:\n{job.tail()}"
    killer()
    return before, batch_in_flight(ckpt), st


def check_exactly_once(ids: list[str], n: int) -> None:
    dupes = len(ids) - len(set(ids))
    assert dupes == 0, f"{dupes} messages written twice"
    missing = {str(i) for i in range(1, n + 1)} - set(ids)
    assert not missing, f"{len(missing)} messages missing from the output, e.g. {sorted(missing)[:5]}"


@pytest.mark.parametrize("line", VERSIONS)
def test_driver_sigkilled_mid_batch_then_restarted_is_exactly_once(line, jar, tmp_path):
    n, rate, kills = 1000, 10, 2
    server = loadserver_and_subscription(n, rate)
    sp = spec(jar, server.host_port, SUB, tmp_path, options=PACED, trigger_ms=1000)
    ckpt = tmp_path / "ck"
    rng = random.Random(int(os.environ.get("DRIVER_KILL_SEED", "7")))
    landed = []
    try:
        for k in range(kills):
            job = FaultJob(line, sp, tmp_path)
            try:
                before, after, st = kill_mid_batch(job, ckpt, server, rng, job.kill)
            finally:
                job.kill()
            assert st["outstanding"] > 0, f"kill {k}: the driver held no messages; {st}"
            landed.append((before, after))

        job = FaultJob(line, sp, tmp_path)  # the last run reads on until every message is acked
        try:
            wait_for(lambda: LoadServer.settled(server.stats()) >= n, HANG_S, "ack of every message", job)
            Path(sp["stop_file"]).touch()
            r = job.result()
        finally:
            job.kill()
        st = server.stats()
        left = google_pull_finds_nothing(server.host_port, SUB)
    finally:
        server.stop()

    assert r["spark"].startswith(line), r["spark"]
    assert r["error"] is None, r["error"]
    assert all(b is not None and b == a for b, a in landed), f"a kill landed outside a micro-batch: {landed}"
    assert st["expired"] > 0 and st["redelivered"] > 0, f"no lease of a killed driver lapsed; {st}"
    check_exactly_once(r["ids"], n)
    assert r["redelivered_rows"] > 0, "no row was a redelivery: no kill cut a task's messages off"
    assert LoadServer.settled(st) == n and left == 0, f"left unacked: {left}; {st}"
    print(f"{line}: kills in batches {landed}; redelivered rows {r['redelivered_rows']}; server {st}")


def executor_pids(root: int, port: int) -> list[int]:
    """The executor JVMs under root (local-cluster's CoarseGrainedExecutorBackend
    processes) with a connection to the server's port."""
    import psutil

    out = []
    for p in psutil.Process(root).children(recursive=True):
        try:
            if "CoarseGrainedExecutorBackend" not in " ".join(p.cmdline()):
                continue
            if any(c.raddr and c.raddr.port == port for c in p.net_connections("tcp")):
                out.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


@pytest.mark.parametrize("line", VERSIONS)
def test_executor_jvm_sigkilled_mid_task_in_local_cluster_is_exactly_once(line, jar, tmp_path):
    n, rate = 600, 10
    server = loadserver_and_subscription(n, rate)
    port = int(server.host_port.rsplit(":", 1)[1])
    sp = spec(jar, server.host_port, SUB, tmp_path, options=PACED, trigger_ms=1000,
              master="local-cluster[2,1,1024]", conf={"spark.executor.memory": "512m"})
    ckpt = tmp_path / "ck"
    rng = random.Random(int(os.environ.get("EXECUTOR_KILL_SEED", "7")))
    job = FaultJob(line, sp, tmp_path)
    victim: list[int] = []
    try:
        def kill_executor() -> None:
            pids = executor_pids(job.proc.pid, port)
            assert pids, "no executor JVM connected to the server"
            victim.append(pids[0])
            os.kill(pids[0], signal.SIGKILL)

        before, after, st = kill_mid_batch(job, ckpt, server, rng, kill_executor)
        wait_for(lambda: LoadServer.settled(server.stats()) >= n, HANG_S, "ack of every message", job)
        Path(sp["stop_file"]).touch()
        r = job.result()
        st_end = server.stats()
        left = google_pull_finds_nothing(server.host_port, SUB)
    finally:
        job.kill()
        server.stop()

    assert r["spark"].startswith(line), r["spark"]
    assert r["error"] is None, f"the query failed after the executor died: {r['error']}"
    assert before is not None and before == after, f"the kill did not land while batch {before}'s tasks ran"
    assert st["outstanding"] > 0, st
    assert (ckpt / "commits" / str(before)).exists(), f"batch {before}, running at the kill, never committed"
    check_exactly_once(r["ids"], n)
    assert st_end["expired"] > 0, f"nothing the killed executor held lapsed; {st_end}"
    assert LoadServer.settled(st_end) == n and left == 0, f"left unacked: {left}; {st_end}"
    print(f"{line}: executor {victim} killed in batch {before}; redelivered rows {r['redelivered_rows']}; "
          f"server {st_end}")


@pytest.mark.parametrize("line", VERSIONS)
def test_connections_cut_mid_read_lose_nothing(line, jar, tmp_path):
    """Every connection through the proxy (the tasks' subscribers and the
    driver's acker) is cut every 2 s, abruptly toward the source, while
    the query reads the first half; then the cuts stop and it reads on.
    On the load server, which expires the leases of a cut stream as the
    service does (Google's emulator keeps them leased to the dead stream:
    docs/source.md, "End of backlog")."""
    n = 6000
    server = loadserver_and_subscription(n, 0)
    proxy = CutProxy(server.host_port, every_s=2.0)
    sp = spec(jar, proxy.host_port, SUB, tmp_path, trigger_ms=500,
              options={"numPartitions": PARTS, "maxRecordsPerTrigger": 500})
    job = FaultJob(line, sp, tmp_path)
    try:
        wait_for(lambda: job.rows() >= n // 2, HANG_S, "half the messages read", job)
        proxy.stop_cutting()
        cuts_while_reading, streams = proxy.cuts, server.stats()["streams_opened"]
        wait_for(lambda: LoadServer.settled(server.stats()) >= n, HANG_S, "ack of every message", job)
        Path(sp["stop_file"]).touch()
        r = job.result()
        st = server.stats()
        left = google_pull_finds_nothing(server.host_port, SUB)
    finally:
        job.kill()
        proxy.close()
        server.stop()

    assert r["error"] is None, r["error"]
    assert cuts_while_reading >= 3 and streams > PARTS + 2, (
        f"only {cuts_while_reading} connections cut ({streams} streams opened) while the query read")
    check_exactly_once(r["ids"], n)
    assert LoadServer.settled(st) == n and left == 0, f"left unacked: {left}; {st}"
    print(f"{line}: {cuts_while_reading} cuts while reading, {streams} streams; server {st}")
