"""The task's pull loop (spark/read/task/pull.py) against Google's emulator."""

from __future__ import annotations

import logging
import os
import threading
import time

import pyarrow as pa
import pytest

import pubsub_go.spark.read.task.pull as pull_module
from pubsub_go.errors import PubSubError
from pubsub_go.spark.read.batchlog import BatchLog
from pubsub_go.spark.read.options.source import SourceOptions
from pubsub_go.spark.read.task.partition import PubSubPartition
from pubsub_go.spark.read.task.pull import PULL_BYTES_SHARE
from pubsub_go.spark.read.task.run import _pull_and_record
from pubsub_go.spark.read.task.subscriber_config import subscriber_config
from pubsub_go.spark.read.task.subscriber_pool import POOL


def test_large_payloads_are_pulled_in_batches_of_bounded_bytes(google, emulator, tmp_path):
    """batchSize counts rows; at 100 KB a batch of them would be all that
    flow control holds. A pull is sized by the bytes per message the
    subscriber has seen so far to maxBytesPerPartition / PULL_BYTES_SHARE,
    and no row is lost."""
    topic, sub = google.topic(ack_deadline=60)
    payloads = [os.urandom(100_000) for _ in range(60)]
    ids = google.publish(topic, payloads)
    opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": emulator.host_port,
                                "batchLogLocation": str(tmp_path), "maxWorkerMemoryBytes": str(16 << 20),
                                "maxWaitTimeMs": "2000"})
    cap = opts.max_bytes_per_partition // PULL_BYTES_SHARE  # 1 MiB: 10 rows of 100 KB
    log = BatchLog(str(tmp_path))

    def task(batch: int, rows: int) -> list[pa.RecordBatch]:
        part = PubSubPartition(gen="g", batch=batch, index=0, max_rows=rows)
        return list(_pull_and_record(opts, part, log, None))

    # The first task's subscriber has seen no message when it asks; the
    # worker keeps it (subscriberIdleMs), so the next task's pulls are sized.
    # (Tasks of one query ask for the same rows, so they share it.)
    first = task(0, len(payloads) // 2)
    rest = task(1, len(payloads) // 2)
    got = [m for b in first + rest for m in b.column("message_id").to_pylist()]
    assert sorted(got) == sorted(ids), "every message once"
    assert len(rest) >= 3, [b.num_rows for b in rest]
    row = max(b.nbytes // b.num_rows for b in rest)
    over = [b.nbytes for b in rest if b.nbytes > cap + row]
    assert not over, f"batches over {cap} bytes (+ one row): {over}"


def test_an_available_now_task_gets_only_what_was_published_before_its_cutoff(google, emulator, tmp_path,
                                                                              monkeypatch):
    """AvailableNow: the subscriber releases messages published after the
    cut-off where they arrive (Go); the task's pulls never see them, and
    its entry counts them as late (taken = rows + late + ...)."""
    topic, sub = google.topic(ack_deadline=60)
    before = google.publish(topic, [b"before-%d" % i for i in range(20)])
    time.sleep(0.05)
    cutoff_us = time.time_ns() // 1000
    time.sleep(0.05)
    google.publish(topic, [b"after-%d" % i for i in range(15)])
    opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": emulator.host_port,
                                "batchLogLocation": str(tmp_path), "quietPeriodMs": "2000"})
    log = BatchLog(str(tmp_path))
    part = PubSubPartition(gen="g", batch=0, index=0, max_rows=1000, cutoff_us=cutoff_us)
    seen: list[bytes] = []
    real_pull = pull_module.Subscriber.pull

    def spy(self, *a, **kw):
        got = real_pull(self, *a, **kw)
        seen.extend(got.batch.column("payload").to_pylist())
        return got

    monkeypatch.setattr(pull_module.Subscriber, "pull", spy)
    got = [m for b in _pull_and_record(opts, part, log, None) for m in b.column("message_id").to_pylist()]
    assert sorted(got) == sorted(before), "exactly the messages published before the cut-off"
    assert not [p for p in seen if p.startswith(b"after")], "a late message reached Python"
    stats = log.read("g", 0, 0).stats
    assert stats["late"] >= 15 and stats["rows"] == 20, stats  # a late one may come back and be released again
    assert stats["taken"] == stats["rows"] + stats["late"] + stats["dead_lettered"] + stats["duplicates"], stats
    assert stats["drained"], stats


def test_a_tasks_shorter_last_pull_does_not_shrink_the_next_tasks_batches(google, emulator, tmp_path):
    """A task's last pull asks for the rest of its row cap. The pooled
    subscriber keeps building batchSize-row batches after it: it once built
    every later batch at that smaller size, and tasks whose cap is not a
    multiple of batchSize shrank to ~20-row batches at a third of the speed."""
    topic, sub = google.topic(ack_deadline=60)
    opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": emulator.host_port,
                                "batchLogLocation": str(tmp_path), "batchSize": "8", "maxWaitTimeMs": "2000"})
    log = BatchLog(str(tmp_path))

    def part(batch: int) -> PubSubPartition:
        return PubSubPartition(gen="g", batch=batch, index=0, max_rows=12)

    def task(batch: int) -> list[int]:
        return [b.num_rows for b in _pull_and_record(opts, part(batch), log, None)]

    ids = google.publish(topic, [b"first %d" % i for i in range(12)])
    assert task(0) == [8, 4]
    # Received after that 4-row pull (the worker's pooled subscriber, before
    # the next task asks for 8 again): built into 8-row batches all the same.
    ids += google.publish(topic, [b"later %d" % i for i in range(24)])
    with POOL.lease(subscriber_config(opts, part=part(1)), opts.idle_ms(available_now=False) / 1000) as sub:
        deadline = time.monotonic() + 30
        while sub.stats()["buffered"] < 16 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sub.stats()["buffered"] >= 16, sub.stats()
    assert task(1) == [8, 4]
    assert task(2) == [4, 8], "the rest of the batch split by the last pull, then a whole one"
    entries = [log.read("g", b, 0) for b in range(3)]
    got = [m for e in entries for m in e.data.column("message_id").to_pylist()]
    assert sorted(got) == sorted(ids[:36]), "every message once"


def test_a_task_ends_when_its_query_stops_and_its_subscriber_is_closed_not_kept(google, emulator, tmp_path):
    """Spark kills a stopped query's task, and its worker 2 s later if the
    task still runs (SIGKILL: its streams would be cut, which Google's
    emulator never forgets). A task waiting for rows looks for the driver's
    stop mark (every STOP_CHECK_S, pull.py) and ends at its first look after
    the mark; its subscriber is closed, not kept. Asserted on the looks the
    task made, in order, not on the wall clock."""
    topic, sub = google.topic(ack_deadline=10)
    # Only the stop can end this task: no time budget, no end-of-backlog decision in reach.
    opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": emulator.host_port,
                                "batchLogLocation": str(tmp_path), "quietPeriodMs": "599000",
                                "maxBatchDurationMs": "600000", "subscriberIdleMs": "600000"})
    log = BatchLog(str(tmp_path))
    looks: list[tuple[float, bool]] = []  # (when, saw the mark) of each look the task made, in order
    read_mark = log.stopped_at

    def stopped_at(gen: str) -> float | None:
        at = read_mark(gen)
        looks.append((time.monotonic(), at is not None))
        return at

    log.stopped_at = stopped_at  # type: ignore[method-assign]
    part = PubSubPartition(gen="g", batch=0, index=0, max_rows=100)
    done: list[float] = []

    def task() -> None:
        list(_pull_and_record(opts, part, log, None))
        done.append(time.monotonic())

    t = threading.Thread(target=task, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while len(looks) < 2 and time.monotonic() < deadline:  # waiting for rows, it looks for the mark
        time.sleep(0.05)
    assert len(looks) >= 2, f"the waiting task did not look for the stop mark: {looks}"
    assert not done, "the task ended before its query stopped"
    log.mark_stopped("g")  # as the driver's stop does
    t.join(30)
    assert done, "the task did not end after its query stopped"
    saw = [s for _, s in looks]
    # Each look before the mark saw none; the first that saw it was the last.
    assert saw == [False] * (len(saw) - 1) + [True], f"looks (when, saw the mark): {looks}"
    assert not POOL.keeps(subscriber_config(opts, part=part)), "a stopped query's subscriber was kept"
    # Nothing was lost: a message published now reaches Google's own client at once.
    google.publish(topic, [b"after the stop"])
    assert [m.message.data for m in google.pull_all(sub, max_wait=5)] == [b"after the stop"]


def test_a_batch_rerun_at_restart_clears_the_previous_runs_stop_mark_before_its_tasks(google, emulator, tmp_path):
    """A restart within LATE_RETURN_S of the stop whose first step re-runs
    the batch the stopped run planned: Spark calls partitions() before any
    latestOffset. The stop mark must be gone by then, or the re-run's tasks
    read it as this run's stop and end at their first wait."""
    from pubsub_go.spark.provider import PubSubDataSource

    _, sub = google.topic()
    options = {"subscriptionId": sub, "emulatorHost": emulator.host_port, "batchLogLocation": str(tmp_path)}
    log = BatchLog(str(tmp_path))
    log.mark_stopped("g")  # the stopped run's driver
    assert log.stopped_at("g") is not None
    reader = PubSubDataSource(options).streamReader(PubSubDataSource(options).schema())
    try:
        parts = reader.partitions({"gen": "g", "batch": 3, "run": "old"},
                                  {"gen": "g", "batch": 4, "run": "old", "maxRows": 100})
        assert parts, "the re-run batch planned no partition"
        assert log.stopped_at("g") is None, "the re-run batch's tasks would see the previous run's stop mark"
    finally:
        reader.stop()


def test_a_subscriber_unable_to_receive_is_reported_and_replaced(google, emulator, tmp_path, caplog, monkeypatch):
    """A kept subscriber whose flow control is full with nothing to hand out
    (here: messages taken and never given back) cannot receive. The task
    waiting on it ends after STALL_BOUND_MS (lowered here) with a warning
    that says so, the subscriber is closed, and the next task's fresh one
    reads the rest."""
    monkeypatch.setattr(pull_module, "STALL_BOUND_MS", 1_500)
    topic, sub = google.topic(ack_deadline=10)
    ids = google.publish(topic, [b"m%d" % i for i in range(10)])
    opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": emulator.host_port,
                                "batchLogLocation": str(tmp_path), "maxOutstandingMessages": "5",
                                "quietPeriodMs": "19000", "maxBatchDurationMs": "20000",
                                "subscriberIdleMs": "600000"})
    log = BatchLog(str(tmp_path))

    def part(batch: int) -> PubSubPartition:
        return PubSubPartition(gen="g", batch=batch, index=0, max_rows=10)

    with POOL.lease(subscriber_config(opts, part=part(0)), 600) as stuck:
        taken = 0
        deadline = time.monotonic() + 30
        while taken < len(ids) and time.monotonic() < deadline:  # taken, never given back
            taken += stuck.pull(max_rows=100, wait_ms=1_000).batch.num_rows
        assert taken == len(ids)
    assert stuck.stats()["held"] >= 5 and stuck.stats()["buffered"] == 0, stuck.stats()
    ids += google.publish(topic, [b"n%d" % i for i in range(5)])  # there to receive, if it could
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="pubsub_go.source"):
        rows = sum(b.num_rows for b in _pull_and_record(opts, part(0), log, None))
    assert rows == 0 and time.monotonic() - start < 10, "the task waited out its time budget instead"
    assert "could not receive" in caplog.text and "flow control full" in caplog.text, caplog.text
    with pytest.raises(PubSubError):
        stuck.stats()  # closed, not kept
    # The next task opens a fresh subscriber: the 5 published later at
    # once, the 10 taken before once their lease (10 s) lapses.
    got = []
    deadline = time.monotonic() + 60
    batch = 1
    while len(set(got)) < len(ids) and time.monotonic() < deadline:
        got += [m for b in _pull_and_record(opts, part(batch), log, None) for m in b.column("message_id").to_pylist()]
        batch += 1
    assert sorted(set(got)) == sorted(ids)
