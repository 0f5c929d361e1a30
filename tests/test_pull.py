"""The task's pull loop (spark/read/pull.py) against Google's emulator."""

from __future__ import annotations

import os
import time

import pyarrow as pa

from pubsub_go.spark.read.batchlog import BatchLog
from pubsub_go.spark.read.options import SourceOptions
from pubsub_go.spark.read.partition import PubSubPartition
from pubsub_go.spark.read.pull import PULL_BYTES_SHARE
from pubsub_go.spark.read.subscriber_config import subscriber_config
from pubsub_go.spark.read.subscriber_pool import POOL
from pubsub_go.spark.read.task import _pull_and_record


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
        part = PubSubPartition(gen="g", batch=batch, index=0, max_rows=rows, max_bytes=0, cutoff_us=0)
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


def test_a_tasks_shorter_last_pull_does_not_shrink_the_next_tasks_batches(google, emulator, tmp_path):
    """A task's last pull asks for the rest of its row cap. The pooled
    subscriber keeps building batchSize-row batches after it: it once built
    every later batch at that smaller size, and tasks whose cap is not a
    multiple of batchSize shrank to ~20-row batches at a third of the speed
    (bench/harness/analysis.md, fifteenth pass)."""
    topic, sub = google.topic(ack_deadline=60)
    opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": emulator.host_port,
                                "batchLogLocation": str(tmp_path), "batchSize": "8", "maxWaitTimeMs": "2000"})
    log = BatchLog(str(tmp_path))

    def part(batch: int) -> PubSubPartition:
        return PubSubPartition(gen="g", batch=batch, index=0, max_rows=12, max_bytes=0, cutoff_us=0)

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
