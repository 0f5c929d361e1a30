"""Executor side of the source: one task = one virtual partition.

A task either replays its batch-log entry (a re-run of a batch Spark already
saw) or pulls fresh messages through the worker's subscriber for the query
(its StreamingPull streams stay open between tasks), records them in the
batch log, hands their leases over to the driver, and yields the Go-built
Arrow batches to Spark with zero copies.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..client import Publisher, PublisherConfig, Subscriber, SubscriberConfig
from ..errors import PubSubError
from .batchlog import BatchLog
from .options import SourceOptions
from .schema_mode import SchemaPlan, dead_letter_batch, error_rows, fail_message, limit_hint
from .subscriber_pool import POOL

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


def subscriber_config(opts: SourceOptions, pull: bool = True, plan: SchemaPlan | None = None,
                      part: PubSubPartition | None = None) -> SubscriberConfig:
    extra: dict = {"no_pull": True} if not pull else {}
    if pull and plan is not None:
        extra["decoder"] = plan.decoder_config()
    return SubscriberConfig(
        subscription=opts.subscription,
        **opts.conn.client_kwargs(),
        streams=opts.streams_per_partition,
        max_outstanding_messages=_flow_control_messages(opts, part),
        max_outstanding_bytes=opts.max_bytes_per_partition,
        batch_size=opts.batch_size,
        max_wait_ms=opts.max_wait_ms,
        ack_deadline_seconds=opts.ack_deadline_seconds,
        extra=extra,
    )


def _flow_control_messages(opts: SourceOptions, part: PubSubPartition | None) -> int:
    """Handed-out messages stay outstanding until the task ends, so flow
    control is sized to what the task may hand out, plus one batch ahead."""
    if opts.max_outstanding_messages:
        return opts.max_outstanding_messages
    if part is None:
        return max(2 * opts.batch_size, 1000)
    return min(part.max_rows, 1_000_000) + opts.batch_size


def read_partition(opts: SourceOptions, part: PubSubPartition, plan: SchemaPlan | None = None
                   ) -> Iterator[pa.RecordBatch]:
    batch_log = BatchLog(opts.batch_log_location)
    entry = batch_log.read(part.gen, part.batch, part.index)
    if entry is not None:
        # A re-run: Spark must see exactly what the first run yielded.
        if opts.ack_on_commit and len(entry.ack_ids):
            _renew_leases(opts, entry.ack_ids)
        yield from entry.data.to_batches(max_chunksize=opts.batch_size)
        return
    yield from _pull_and_record(opts, part, batch_log, plan)


def _renew_leases(opts: SourceOptions, ack_ids: pa.Array) -> None:
    try:
        with Subscriber(subscriber_config(opts, pull=False)) as acker:
            acker.modack(ack_ids, opts.commit_lease_seconds)
    except Exception as e:  # expired ids are the only expected failure; the data is in the log
        log.warning("could not renew leases of a replayed batch: %s", e)


class LostRaceError(RuntimeError):
    """Another attempt of this task recorded the batch first; this attempt
    must fail so that Spark keeps only that attempt's version."""


def _pull_and_record(opts: SourceOptions, part: PubSubPartition, batch_log: BatchLog,
                     plan: SchemaPlan | None) -> Iterator[pa.RecordBatch]:
    """Pulls through this worker's subscriber for the query (kept between
    tasks, see subscriber_pool), records each batch, then yields it."""
    config = subscriber_config(opts, plan=plan, part=part)
    with POOL.lease(config, opts.subscriber_idle_ms / 1000) as sub:
        yield from _record(sub, opts, part, batch_log, plan)


# Counters of Subscriber.stats() that a task reports as its own share.
_TASK_COUNTERS = ("pulled", "handed_out", "acked", "nacked", "extended", "redeliveries", "decode_errors",
                  "bytes_pulled", "streams_restarted")


def _record(sub: Subscriber, opts: SourceOptions, part: PubSubPartition, batch_log: BatchLog,
            plan: SchemaPlan | None) -> Iterator[pa.RecordBatch]:
    """Queues each batch for the log's temporary entry (written by the
    entry's thread) and yields it, so Spark works while the streams keep
    pulling and the entry is written. The entry is published once the task
    has handed out everything and all of it is written; until then no re-run
    can see it, and a failed attempt's output is discarded by Spark anyway."""
    before = sub.stats()
    dlq = _DeadLetters(opts, plan) if plan is not None else None
    entry = batch_log.writer(part.gen, part.batch, part.index)
    acks: list[pa.Array] = []
    published = False
    try:
        schema: pa.Schema | None = plan.output if plan else None
        drained = False
        for item in _pull(sub, opts, part, plan, dlq):
            if isinstance(item, bool):
                drained = item
                continue
            b, a = item
            schema = b.schema
            if b.num_rows:
                entry.write(b, a)
                acks.append(a)
                yield b
        assert schema is not None
        all_acks = pa.concat_arrays(acks) if acks else pa.array([], pa.string())
        after = sub.stats()
        stats = {**{k: after.get(k, 0) - before.get(k, 0) for k in _TASK_COUNTERS}, "held": after.get("held", 0),
                 "rows": int(len(all_acks)), "drained": drained, "dead_lettered": dlq.count if dlq else 0}
        published = entry.publish(schema, stats)
        if not published:
            raise LostRaceError(f"batch {part.batch} partition {part.index} was recorded by another attempt "
                                "first; failing this attempt so that Spark keeps that version")
        if len(all_acks):
            if opts.ack_on_commit:
                # Hand the leases to the driver, which acks on commit and keeps
                # them alive meanwhile. Release first: otherwise this
                # subscriber's lease loop could shorten the deadline again.
                sub.release(all_acks)
                sub.modack(all_acks, opts.commit_lease_seconds)
            else:
                sub.ack(all_acks)
    except BaseException:
        # The attempt fails (or Spark stopped consuming it): its output is
        # discarded, so hand back at once what it took, rather than after the lease.
        if not published:
            entry.abort()
            if acks:
                try:
                    sub.nack(pa.concat_arrays(acks))
                except Exception as e:
                    log.warning("nacking the messages of a failed task: %s", e)
        raise
    finally:
        if dlq:
            dlq.close()


def _pull(sub: Subscriber, opts: SourceOptions, part: PubSubPartition, plan: SchemaPlan | None,
          dlq: _DeadLetters | None) -> Iterator[tuple[pa.RecordBatch, pa.Array] | bool]:
    """Yields (batch, ack ids) until a cap, the time budget or an empty
    backlog ends the task; last, whether the backlog was seen drained."""
    rows = nbytes = 0
    flow_messages = _flow_control_messages(opts, part)
    deadline = time.monotonic() + opts.max_batch_duration_ms / 1000
    cutoff = pa.scalar(part.cutoff_us, pa.timestamp("us", tz="UTC")) if part.cutoff_us else None
    while True:
        want = min(opts.batch_size, part.max_rows - rows)
        if want <= 0:
            yield False
            return
        started = time.monotonic()
        try:
            b, a = sub.next_batch(max_rows=want, wait_ms=opts.max_wait_ms)
        except PubSubError as e:
            hint = limit_hint(plan.decode, e) if plan else ""
            if hint:
                raise type(e)(e.code, e.message + hint) from None
            raise
        # Short and the whole wait passed: nothing more is buffered. (Short
        # and early is the end of a batch built for another size.)
        waited_out = b.num_rows < want and time.monotonic() - started >= opts.max_wait_ms / 1000
        if cutoff is not None and b.num_rows:
            keep = pc.less_equal(b.column("publish_time"), cutoff)
            late = a.filter(pc.invert(keep))
            if len(late):
                sub.nack(late)  # published after AvailableNow started: not this query's run
            b, a = b.filter(keep), a.filter(keep)
        if plan is not None:
            b, a = _handle_decode_errors(sub, opts, plan, dlq, b, a)
            b = plan.project(b)
        rows += b.num_rows
        nbytes += b.nbytes
        yield b, a
        if waited_out:
            # Short batch: the backlog is empty for now -- unless flow control
            # (what this task holds) is what stopped the streams.
            stalled = rows + opts.batch_size > flow_messages or nbytes >= 0.9 * opts.max_bytes_per_partition
            yield not stalled
            return
        if time.monotonic() >= deadline or (part.max_bytes and nbytes >= part.max_bytes):
            yield False
            return


def _handle_decode_errors(sub: Subscriber, opts: SourceOptions, plan: SchemaPlan, dlq: _DeadLetters | None,
                          b: pa.RecordBatch, a: pa.Array) -> tuple[pa.RecordBatch, pa.Array]:
    """Applies onDecodeError to the rows that failed to decode."""
    bad = error_rows(b)
    if bad is None or plan.decode.on_error == "column":
        return b, a
    if plan.decode.on_error == "fail":
        msg = fail_message(b, bad, opts.subscription)
        sub.nack(a)
        raise DecodeFailedError(msg)
    assert dlq is not None
    dlq.publish(b, bad)  # returns once Pub/Sub has them
    sub.ack(a.filter(bad))
    good = pc.invert(bad)
    return b.filter(good), a.filter(good)


class DecodeFailedError(RuntimeError):
    """onDecodeError=fail: a record failed to decode."""


class _DeadLetters:
    """Publishes payloads that failed to decode to deadLetterTopicId."""

    def __init__(self, opts: SourceOptions, plan: SchemaPlan) -> None:
        self.opts, self.plan = opts, plan
        self.count = 0
        self._pub: Publisher | None = None

    def publish(self, batch: pa.RecordBatch, bad: pa.Array) -> None:
        if self._pub is None:
            self._pub = Publisher(PublisherConfig(topic=self.plan.decode.dead_letter_topic,
                                                  **self.opts.conn.client_kwargs()))
        out = dead_letter_batch(batch, bad, self.opts.subscription)
        self._pub.publish(out)
        self._pub.flush(timeout_ms=60_000)
        self.count += out.num_rows

    def close(self) -> None:
        if self._pub is not None:
            self._pub.close()
