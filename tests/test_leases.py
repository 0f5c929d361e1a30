"""The driver's lease keeper (spark/read/driver/leases.py): a finished batch's
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

from pubsub_go.spark.read.driver.figures import Figures
from pubsub_go.spark.read.driver.leases import LeaseKeeper


class SlowAcker:
    """Records modack calls; each waits until `answer` is set (a request
    the server has not answered yet), and the first fail_first fail."""

    def __init__(self, fail_first: int = 0, answered: bool = True) -> None:
        self.fail_first = fail_first
        self.calls: list[tuple[list[str], int]] = []
        self.started = threading.Event()
        self.answer = threading.Event()
        if answered:
            self.answer.set()
        self.done = threading.Event()

    def modack(self, ids: pa.Array, seconds: int) -> None:
        self.started.set()
        assert self.answer.wait(30), "the test never answered the request"
        if self.fail_first > 0:
            self.fail_first -= 1
            raise RuntimeError("UNAVAILABLE: injected")
        self.calls.append((ids.to_pylist(), seconds))
        self.done.set()


def keeper(acker: SlowAcker) -> LeaseKeeper:
    opts = SimpleNamespace(commit_lease_seconds=600, ack_on_commit=True)
    return LeaseKeeper(acker, opts, threading.Lock(), Figures(), lambda: [])  # type: ignore[arg-type]


def test_renew_returns_at_once_and_the_thread_extends_the_ids():
    acker = SlowAcker(answered=False)  # the request hangs until the test answers it
    k = keeper(acker)
    try:
        ids = [pa.array(["a", "b"]), pa.array(["c"])]
        k.renew(ids)  # had it waited for the request, the acker would fail it after 30 s
        assert acker.started.wait(30), "the finished batch's leases were never extended"
        assert not acker.done.is_set()
        acker.answer.set()
        assert acker.done.wait(30), "the request never finished"
        assert acker.calls == [(["a", "b", "c"], 600)]
    finally:
        k.stop()
        k.join(30)
    assert not k._thread.is_alive(), "stop() did not end the thread"


def test_a_failed_take_over_does_not_stop_the_keeper():
    acker = SlowAcker(fail_first=1)
    k = keeper(acker)
    try:
        k.renew([pa.array(["x"])])
        deadline = time.monotonic() + 30
        while acker.fail_first and time.monotonic() < deadline:
            time.sleep(0.01)
        assert acker.fail_first == 0, "the failing request was never made"
        k.renew([pa.array(["y"])])
        assert acker.done.wait(30), "the keeper stopped after a failure"
        assert acker.calls == [(["y"], 600)]
    finally:
        k.stop()
        k.join(30)


def test_the_driver_takes_over_only_the_leases_a_task_did_not_hand_over(tmp_path):
    """A task that recorded its batch sets its messages' leases to
    commitLeaseSeconds and marks its entry; the driver, when it first sees
    the batch finished, sets again only the leases of entries without the
    mark (a hand-over that failed), not every message a second time."""
    from emulators import topic_with_messages
    from pubsub_go.client import Emulator
    from pubsub_go.spark.read.batchlog import BatchLog
    from pubsub_go.spark.read.driver.state import DriverState
    from pubsub_go.spark.read.options.source import SourceOptions
    from pubsub_go.spark.read.task.partition import PubSubPartition
    from pubsub_go.spark.read.task.run import _pull_and_record

    with Emulator() as emu:
        sub = topic_with_messages(emu.host_port, "l", [b"m%d" % i for i in range(6)])
        opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": emu.host_port,
                                    "batchLogLocation": str(tmp_path), "subscriberIdleMs": "0"})
        log = BatchLog(str(tmp_path))
        handed = PubSubPartition(gen="g", batch=1, index=0, max_rows=6)
        rows = sum(b.num_rows for b in _pull_and_record(opts, handed, log, None))
        assert rows >= 1
        assert log.handed_over(log.entry_path("g", 1, 0)), "the task did not mark its hand-over"
        # A second entry whose task failed to hand over (no mark): written
        # as the task writes it, without the modack.
        w = log.writer("g", 1, 1)
        b = pa.record_batch({"message_id": pa.array(["x1", "x2"])})
        w.write(b, pa.array(["ack-x1", "ack-x2"]), b.column("message_id"))
        assert w.publish(b.schema, {"rows": 2})

        st = DriverState(opts)
        renewed: list[list[str]] = []
        st.leases.renew = lambda ids: renewed.append(pa.concat_arrays(ids).to_pylist() if ids else [])
        try:
            summary = st.batch_summary("g", 1)
            assert summary is not None and summary.rows == rows + 2
            assert renewed == [["ack-x1", "ack-x2"]], renewed
        finally:
            st.stop()
