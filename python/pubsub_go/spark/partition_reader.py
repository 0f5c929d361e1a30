"""Executor side of the source: one task = one virtual partition.

A task either replays its batch-log entry (a re-run of a batch Spark already
saw) or pulls fresh messages through its own StreamingPull streams, records
them in the batch log, hands their leases over to the driver, and yields the
Go-built Arrow batches to Spark with zero copies.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..client import Subscriber, SubscriberConfig
from .batchlog import BatchLog
from .options import SourceOptions

log = logging.getLogger("pubsub_go.source")


@dataclass(frozen=True)
class PubSubPartition:
    """A planned task; picklable (pyspark InputPartition duck type)."""

    gen: str
    batch: int
    index: int
    max_rows: int
    max_bytes: int  # 0: no limit
    cutoff_us: int  # AvailableNow: hand out only messages published at or before this; 0: none


def subscriber_config(opts: SourceOptions, pull: bool = True) -> SubscriberConfig:
    return SubscriberConfig(
        subscription=opts.subscription,
        emulator_host=opts.emulator_host,
        credentials=opts.credentials,
        streams=opts.streams_per_partition,
        max_outstanding_messages=opts.max_outstanding_messages or max(2 * opts.batch_size, 1000),
        batch_size=opts.batch_size,
        max_wait_ms=opts.max_wait_ms,
        ack_deadline_seconds=opts.ack_deadline_seconds,
        extra={} if pull else {"no_pull": True},
    )


def read_partition(opts: SourceOptions, part: PubSubPartition) -> Iterator[pa.RecordBatch]:
    batch_log = BatchLog(opts.batch_log_location)
    entry = batch_log.read(part.gen, part.batch, part.index)
    if entry is not None:
        # A re-run: Spark must see exactly what the first run yielded.
        if opts.ack_on_commit and len(entry.ack_ids):
            _renew_leases(opts, entry.ack_ids)
        yield from entry.data.to_batches(max_chunksize=opts.batch_size)
        return
    yield from _pull_and_record(opts, part, batch_log)


def _renew_leases(opts: SourceOptions, ack_ids: pa.Array) -> None:
    try:
        with Subscriber(subscriber_config(opts, pull=False)) as acker:
            acker.modack(ack_ids, opts.commit_lease_seconds)
    except Exception as e:  # expired ids are the only expected failure; the data is in the log
        log.warning("could not renew leases of a replayed batch: %s", e)


def _pull_and_record(opts: SourceOptions, part: PubSubPartition, batch_log: BatchLog) -> Iterator[pa.RecordBatch]:
    sub = Subscriber(subscriber_config(opts))
    try:
        batches, acks, schema, drained = _pull(sub, opts, part)
        all_acks = pa.concat_arrays(acks) if acks else pa.array([], pa.string())
        stats = {**sub.stats(), "rows": int(len(all_acks)), "drained": drained}
        if not batch_log.write_once(part.gen, part.batch, part.index, batches, acks, schema, stats):
            # Another attempt of this task won: its entry is the batch.
            if len(all_acks):
                sub.nack(all_acks)
            entry = batch_log.read(part.gen, part.batch, part.index)
            assert entry is not None
            batches = entry.data.to_batches(max_chunksize=opts.batch_size)
        elif len(all_acks):
            if opts.ack_on_commit:
                # Hand the leases to the driver, which acks on commit and keeps
                # them alive meanwhile. Release first: otherwise this
                # subscriber's lease loop could shorten the deadline again.
                sub.release(all_acks)
                sub.modack(all_acks, opts.commit_lease_seconds)
            else:
                sub.ack(all_acks)
    finally:
        sub.close()  # nacks whatever was pulled but not handed out
    yield from batches


def _pull(sub: Subscriber, opts: SourceOptions, part: PubSubPartition
          ) -> tuple[list[pa.RecordBatch], list[pa.Array], pa.Schema, bool]:
    batches: list[pa.RecordBatch] = []
    acks: list[pa.Array] = []
    rows = nbytes = 0
    drained = False
    schema: pa.Schema | None = None
    deadline = time.monotonic() + opts.max_batch_duration_ms / 1000
    cutoff = pa.scalar(part.cutoff_us, pa.timestamp("us", tz="UTC")) if part.cutoff_us else None
    while True:
        want = min(opts.batch_size, part.max_rows - rows)
        if want <= 0:
            break
        b, a = sub.next_batch(max_rows=want, wait_ms=opts.max_wait_ms)
        schema = b.schema
        full = b.num_rows >= want
        if cutoff is not None and b.num_rows:
            keep = pc.less_equal(b.column("publish_time"), cutoff)
            late = a.filter(pc.invert(keep))
            if len(late):
                sub.nack(late)  # published after AvailableNow started: not this query's run
            b, a = b.filter(keep), a.filter(keep)
        if b.num_rows:
            batches.append(b)
            acks.append(a)
            rows += b.num_rows
            nbytes += b.nbytes
        if not full:
            drained = True  # the backlog is empty for now: end the task, keep latency low
            break
        if time.monotonic() >= deadline or (part.max_bytes and nbytes >= part.max_bytes):
            break
    assert schema is not None
    return batches, acks, schema, drained
