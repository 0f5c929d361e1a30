"""The task's pull loop (spark/read/pull.py) against Google's emulator."""

from __future__ import annotations

import os

import pyarrow as pa

from pubsub_go.spark.read.batchlog import BatchLog
from pubsub_go.spark.read.options import SourceOptions
from pubsub_go.spark.read.partition import PubSubPartition
from pubsub_go.spark.read.pull import PULL_BYTES_SHARE
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
