"""The whole driver is killed with SIGKILL while a micro-batch's tasks are
pulling, three times (the job's process group: the JVM and the driver's
Python; Spark's Python workers, in a group of their own under
pyspark.daemon, exit as soon as the JVM is gone); the
query restarted from its checkpoint ends with every message in the file
sink exactly once.

At each kill the tasks hold messages they handed to Spark but have not
recorded in the batch log, and the pooled subscribers hold their prefetch;
all of their streams are cut without a half-close. Those messages must come
back (the server expires their leases and redelivers them) and be written
once; the re-run of the interrupted batch must not also replay them.

The server is bench/loadserver, paced (--rate) so each task pulls for
seconds and a kill lands inside one: Google's emulator keeps a killed
stream's messages leased to nobody until it restarts (docs/source.md, "End
of backlog"), so there the same kill is tested only between micro-batches
(tests/test_source.py::test_hard_stop_of_the_whole_driver_is_exactly_once).

Killing right after a micro-batch is planned leaves the largest backlog of
redeliveries: the restarted query's subscribers fill up and pause their
streams while the server still leases into them. Before the subscriber
bounded how long a paused stream's messages wait (go/internal/subscriber/
pipe.go), about a third of such runs wrote 20-35 messages twice: one
partition's subscriber handed out copies whose lease had run out in gRPC's
buffers, after the server had redelivered them to the other partition.
DRIVER_KILL_SEED picks other kill times (the default is 7).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulators import LoadServer
from sparkutil import spark_session

pytestmark = pytest.mark.spark

JOBS = Path(__file__).parent / "jobs"
N = 3000
RATE = 60  # msg/s: 150 rows a micro-batch take ~2.5 s to arrive
KILLS = 3


def _batch_in_flight(ckpt: Path, batch_log: Path) -> int | None:
    """The micro-batch that was running when the driver died: planned (its
    offsets written) but neither committed nor fully recorded (both of its
    partitions' batch-log entries published). None if there is none."""
    offsets = {int(p.name) for p in (ckpt / "offsets").glob("[0-9]*")}
    commits = {int(p.name) for p in (ckpt / "commits").glob("[0-9]*")}
    for b in sorted(offsets - commits):
        if len(list(batch_log.glob(f"*/{b}/part-*.arrow"))) < 2:
            return b
    return None


@pytest.mark.timeout(600)  # each job run also ends by itself after 600 s
def test_driver_killed_during_tasks_is_exactly_once(tmp_path):
    from pubsub_go.client import admin

    server = LoadServer("--messages", str(N), "--payload-bytes", "100", "--rate", str(RATE))
    sub = "projects/d/subscriptions/s"
    out, ckpt, blog, stop = tmp_path / "out", tmp_path / "ckpt", tmp_path / "batchlog", tmp_path / "stop"
    args = [sys.executable, str(JOBS / "source_to_parquet.py"), server.host_port, sub, str(out), str(ckpt),
            str(blog), "600", "--pooled", "--trigger-seconds", "0", "--ack-deadline", "10",
            "--stop-file", str(stop)]
    rng = random.Random(int(os.environ.get("DRIVER_KILL_SEED", "7")))
    in_flight = []
    try:
        admin("create_topic", emulator_host=server.host_port, topic="projects/d/topics/t")
        admin("create_subscription", emulator_host=server.host_port, topic="projects/d/topics/t",
              subscription=sub)
        for kill in range(KILLS):
            p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
            try:
                deadline = time.monotonic() + 180
                for line in p.stdout:  # until the first micro-batch with rows ends
                    if line.startswith("between") and " rows=0" not in line:
                        break
                    assert time.monotonic() < deadline, f"run {kill}: no micro-batch ended within 180 s"
                # The next micro-batch starts at once (trigger 0) and its
                # tasks pull for ~2.5 s; kill soon after it is planned.
                while _batch_in_flight(ckpt, blog) is None:
                    assert time.monotonic() < deadline, f"run {kill}: no micro-batch planned within 180 s"
                    time.sleep(0.05)
                # On a loaded machine the tasks may start pulling well after
                # the batch is planned: kill only once they hold messages.
                while server.stats()["outstanding"] == 0:
                    assert time.monotonic() < deadline, f"run {kill}: no task held messages within 180 s"
                    time.sleep(0.05)
                time.sleep(rng.uniform(0.2, 0.8))
                # The tasks may have ended meanwhile (a loaded machine): kill
                # at once after a look that finds messages held again.
                while (before := server.stats())["outstanding"] == 0:
                    assert time.monotonic() < deadline, f"run {kill}: no task held messages within 180 s"
                    time.sleep(0.01)
            finally:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)
            in_flight.append(_batch_in_flight(ckpt, blog))
            assert before["outstanding"] > 0, f"run {kill}: the driver held no messages when killed; {before}"

        # The last run goes on until the server has every message acked.
        # Replayed batch-log entries ack ids whose leases expired; those
        # match nothing and must not count (LoadServer.settled).
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        try:
            deadline = time.monotonic() + 240
            while LoadServer.settled(server.stats()) < N:
                assert p.poll() is None, f"the last run ended early: {p.stdout.read()[-3000:]}"
                assert time.monotonic() < deadline, f"not every message was acked; {server.stats()}"
                time.sleep(0.5)
            stop.touch()
            output, _ = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)
        assert "clean exit" in output, output[-3000:]
        st = server.stats()
    finally:
        server.stop()

    mid_task = [b for b in in_flight if b is not None]
    assert len(mid_task) >= KILLS - 1, (
        f"only {len(mid_task)} of {KILLS} kills landed while a micro-batch ran (batches {in_flight})")
    assert st["expired"] > 0 and st["redelivered"] > 0, f"no lease of the killed drivers expired; {st}"

    s = spark_session(app="driver-kill-check")
    try:
        rows = s.read.parquet(str(out)).select("message_id", "delivery_attempt").collect()
    finally:
        s.stop()
    ids = [r.message_id for r in rows]
    dupes = len(ids) - len(set(ids))
    assert dupes == 0, f"{dupes} duplicates in the file sink output"
    missing = {str(i) for i in range(1, N + 1)} - set(ids)
    assert not missing, f"{len(missing)} messages missing from the file sink output; server {st}"
    again = sum(1 for r in rows if r.delivery_attempt >= 2)
    assert again > 0, "no row was a redelivery, so no kill cut a task's messages off"
    print(f"kills in batches {in_flight}; redelivered rows {again}; server {st}")
