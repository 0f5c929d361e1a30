"""The driver's lease keeper (spark/read/leases.py): a finished batch's
leases are taken over on its thread, so latestOffset never waits for the
ModifyAckDeadline requests. The acker is a stand-in that records calls and
takes its time or fails on demand: the slowness and the failure are the
faults injected here; the real acker is covered end to end by
test_exactly_once.py and test_executor_kill.py."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pyarrow as pa

from pubsub_go.spark.read.figures import Figures
from pubsub_go.spark.read.leases import LeaseKeeper


class SlowAcker:
    def __init__(self, delay: float, fail_first: int = 0) -> None:
        self.delay, self.fail_first = delay, fail_first
        self.calls: list[tuple[list[str], int]] = []
        self.done = threading.Event()

    def modack(self, ids: pa.Array, seconds: int) -> None:
        time.sleep(self.delay)
        if self.fail_first > 0:
            self.fail_first -= 1
            raise RuntimeError("UNAVAILABLE: injected")
        self.calls.append((ids.to_pylist(), seconds))
        self.done.set()


def keeper(acker: SlowAcker) -> LeaseKeeper:
    opts = SimpleNamespace(commit_lease_seconds=600, ack_on_commit=True)
    return LeaseKeeper(acker, opts, threading.Lock(), Figures(), lambda: [])  # type: ignore[arg-type]


def test_renew_returns_at_once_and_the_thread_extends_the_ids():
    acker = SlowAcker(delay=0.5)
    k = keeper(acker)
    try:
        ids = [pa.array(["a", "b"]), pa.array(["c"])]
        t0 = time.monotonic()
        k.renew(ids)
        assert time.monotonic() - t0 < 0.1, "renew waited for the request"
        assert acker.done.wait(5), "the finished batch's leases were never extended"
        assert acker.calls == [(["a", "b", "c"], 600)]
    finally:
        k.stop()
        k.join(5)
    assert not k._thread.is_alive(), "stop() did not end the thread"


def test_a_failed_take_over_does_not_stop_the_keeper():
    acker = SlowAcker(delay=0.0, fail_first=1)
    k = keeper(acker)
    try:
        k.renew([pa.array(["x"])])
        deadline = time.monotonic() + 5
        while acker.fail_first and time.monotonic() < deadline:
            time.sleep(0.01)
        assert acker.fail_first == 0, "the failing request was never made"
        k.renew([pa.array(["y"])])
        assert acker.done.wait(5), "the keeper stopped after a failure"
        assert acker.calls == [(["y"], 600)]
    finally:
        k.stop()
        k.join(5)
