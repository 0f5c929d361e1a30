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
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..client import Publisher, PublisherConfig, Subscriber, SubscriberConfig
from ..errors import PubSubError
from . import faults
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
    return SubscriberConfig(
        subscription=opts.subscription,
        **opts.conn.client_kwargs(),
        streams=opts.streams_per_partition,
        max_outstanding_messages=_flow_control_messages(opts, part),
        max_outstanding_bytes=opts.max_bytes_per_partition,
        batch_size=opts.batch_size,
        max_wait_ms=opts.max_wait_ms,
        ack_deadline_seconds=opts.ack_deadline_seconds,
        arrival_cutoff_us=part.cutoff_us if part else 0,
        no_pull=not pull,
        decoder=plan.decoder_config() if pull and plan is not None else None,
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
    with POOL.lease(config, opts.idle_ms(available_now=part.cutoff_us > 0) / 1000) as sub:
        yield from _record(sub, opts, part, batch_log, plan)


# Counters of Subscriber.stats() that a task reports as its own share.
_TASK_COUNTERS = ("pulled", "handed_out", "acked", "nacked", "extended", "redeliveries", "decode_errors",
                  "bytes_pulled", "streams_restarted")


# The subscriber's counters when its last task ended, per pooled subscriber.
_MARKS: weakref.WeakKeyDictionary[Subscriber, dict[str, int]] = weakref.WeakKeyDictionary()


@dataclass
class _Tally:
    """What a task did with the messages it took from its subscriber:
    taken = rows + late + dead_lettered + duplicates (docs/source.md,
    "Counters")."""

    taken: int = 0  # rows handed to the task by the subscriber
    rows: int = 0  # handed to Spark (and recorded)
    late: int = 0  # published after an AvailableNow query's start: left for later runs
    dead_lettered: int = 0  # undecodable, published to the dead-letter topic and acked
    duplicates: int = 0  # redeliveries of messages already recorded, dropped and acked
    drained: bool = False  # ended on positive evidence that the backlog is empty
    quiet_ms: int = 0  # the subscriber's quiet time when the task ended
    oldest_publish_us: int = 0  # publish time of the oldest row handed to Spark; 0: none


def _record(sub: Subscriber, opts: SourceOptions, part: PubSubPartition, batch_log: BatchLog,
            plan: SchemaPlan | None) -> Iterator[pa.RecordBatch]:
    """Queues each batch for the log's temporary entry (written by the
    entry's thread) and yields it, so Spark works while the streams keep
    pulling and the entry is written. The entry is published once the task
    has handed out everything and all of it is written; until then no re-run
    can see it, and a failed attempt's output is discarded by Spark anyway."""
    # Counted from where the subscriber's previous task left off, so what a
    # pooled subscriber pulled between tasks is counted by the next one.
    before = _MARKS.get(sub) or {}
    dlq = _DeadLetters(opts, plan) if plan is not None else None
    entry = batch_log.writer(part.gen, part.batch, part.index)
    recorded = batch_log.recorded_message_ids(part.gen)
    tally = _Tally()
    acks: list[pa.Array] = []
    published = False
    try:
        schema: pa.Schema | None = plan.output if plan else None
        for b, a, ids in _pull(sub, opts, part, plan, dlq, recorded, tally):
            schema = b.schema
            if b.num_rows:
                entry.write(b, a, ids)
                acks.append(a)
                yield b
        assert schema is not None
        all_acks = pa.concat_arrays(acks) if acks else pa.array([], pa.string())
        after = sub.stats()
        _MARKS[sub] = after
        stats = {**{k: after.get(k, 0) - before.get(k, 0) for k in _TASK_COUNTERS},
                 "held": after.get("held", 0), "buffered": after.get("buffered", 0),
                 "taken": tally.taken, "rows": tally.rows, "late": tally.late,
                 "dead_lettered": tally.dead_lettered, "duplicates": tally.duplicates,
                 "drained": tally.drained, "quiet_ms": tally.quiet_ms,
                 "oldest_publish_us": tally.oldest_publish_us}
        published = entry.publish(schema, stats)
        if not published:
            raise LostRaceError(f"batch {part.batch} partition {part.index} was recorded by another attempt "
                                "first; failing this attempt so that Spark keeps that version")
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
    if len(all_acks):
        _hand_over(sub, opts, all_acks)


def _hand_over(sub: Subscriber, opts: SourceOptions, acks: pa.Array) -> None:
    """After the entry is published its rows belong to the batch log: Spark
    sees exactly them on any re-run. So nothing here may fail the task: a
    failed lease hand-over is retried (bounded, inside the library) and then
    left to the driver, which renews the leases of every entry it reads."""
    try:
        if opts.ack_on_commit:
            # The driver acks on commit and keeps the leases alive until then.
            # Release first: otherwise this subscriber's lease loop could
            # shorten the deadline again.
            sub.release(acks)
            faults.inject("post_record_modack")
            sub.modack(acks, opts.commit_lease_seconds)
        else:
            faults.inject("post_record_ack")
            sub.ack(acks)
    except PubSubError as e:
        log.warning("handing over the leases of %d recorded messages failed; the driver renews them when it "
                    "reads the entry, and a redelivery of any of them is dropped as a duplicate: %s", len(acks), e)


def _pull(sub: Subscriber, opts: SourceOptions, part: PubSubPartition, plan: SchemaPlan | None,
          dlq: _DeadLetters | None, recorded: pa.Array, tally: _Tally
          ) -> Iterator[tuple[pa.RecordBatch, pa.Array, pa.Array]]:
    """Yields (batch, ack ids, message ids) until a cap, the time budget,
    (streaming) a wait that ran out after rows were taken, or positive
    evidence of an empty backlog ends the task; sets tally.drained for the
    last.

    A task that has yielded nothing does not end when a wait runs out: a
    new stream, a reconnect or a redelivery burst can take seconds, so it
    keeps waiting until the subscriber has been able to receive for
    quietPeriodMs with nothing arriving (or the time budget runs out)."""
    nbytes = 0
    deadline = time.monotonic() + opts.max_batch_duration_ms / 1000
    cutoff = pa.scalar(part.cutoff_us, pa.timestamp("us", tz="UTC")) if part.cutoff_us else None
    while True:
        want = min(opts.batch_size, part.max_rows - tally.rows)
        if want <= 0:
            return
        try:
            got = sub.pull(max_rows=want, wait_ms=opts.max_wait_ms)
        except PubSubError as e:
            hint = limit_hint(plan.decode, e) if plan else ""
            if hint:
                raise type(e)(e.code, e.message + hint, e.kind) from None
            raise
        b, a = got.batch, got.ack_ids
        tally.taken += b.num_rows
        if b.num_rows:
            b, a = _drop_late(sub, b, a, cutoff, tally)
            b, a = _drop_recorded(sub, b, a, recorded, tally)
        if plan is not None and b.num_rows:
            b, a = _handle_decode_errors(sub, opts, plan, dlq, b, a, tally)
        ids = b.column("message_id")
        if b.num_rows:
            oldest = pc.min(b.column("publish_time")).cast(pa.int64()).as_py()
            if oldest is not None:
                tally.oldest_publish_us = min(tally.oldest_publish_us or oldest, oldest)
        if plan is not None:
            b = plan.project(b)
        tally.rows += b.num_rows
        nbytes += b.nbytes
        yield b, a, ids
        if got.waited_out:
            quiet = int(sub.stats().get("quiet_ms", 0))
            tally.quiet_ms = quiet
            if quiet >= opts.quiet_period_ms:
                tally.drained = True
                return
            if tally.rows and not part.cutoff_us:
                # Streaming: hand over what there is (latency); the next batch
                # waits for more. AvailableNow reads on until the backlog is
                # drained or the task's budget is spent (throughput: a bursty
                # server pauses for longer than maxWaitTimeMs all the time).
                return
        if time.monotonic() >= deadline or (part.max_bytes and nbytes >= part.max_bytes):
            return


def _drop_late(sub: Subscriber, b: pa.RecordBatch, a: pa.Array, cutoff: pa.Scalar | None,
               tally: _Tally) -> tuple[pa.RecordBatch, pa.Array]:
    """AvailableNow: messages published after the query started are not
    this run's. They are released, not nacked: they keep their lease (at
    most ackDeadlineSeconds) and come back after it, instead of bouncing
    straight back into this run's streams as a nack storm."""
    if cutoff is None:
        return b, a
    keep = pc.less_equal(b.column("publish_time"), cutoff)
    late = a.filter(pc.invert(keep))
    if not len(late):
        return b, a
    sub.release(late)
    tally.late += len(late)
    return b.filter(keep), a.filter(keep)


def _drop_recorded(sub: Subscriber, b: pa.RecordBatch, a: pa.Array, recorded: pa.Array,
                   tally: _Tally) -> tuple[pa.RecordBatch, pa.Array]:
    """Drops redeliveries of messages already in the batch log (recorded,
    not yet acked: a lease hand-over or an ack that failed). Replaying the
    log delivers them; reading them again would deliver them twice. The
    redelivered copy is acked: the recorded one is Spark's."""
    if not len(recorded):
        return b, a
    dup = pc.is_in(b.column("message_id"), value_set=recorded)
    if not pc.any(dup).as_py():
        return b, a
    dups = a.filter(dup)
    try:
        sub.ack(dups)
    except PubSubError as e:  # they come back and are dropped again
        log.warning("acking %d redelivered duplicates failed: %s", len(dups), e)
    tally.duplicates += len(dups)
    keep = pc.invert(dup)
    return b.filter(keep), a.filter(keep)


def _handle_decode_errors(sub: Subscriber, opts: SourceOptions, plan: SchemaPlan, dlq: _DeadLetters | None,
                          b: pa.RecordBatch, a: pa.Array, tally: _Tally) -> tuple[pa.RecordBatch, pa.Array]:
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
    tally.dead_lettered += int(pc.sum(bad).as_py() or 0)
    good = pc.invert(bad)
    return b.filter(good), a.filter(good)


class DecodeFailedError(RuntimeError):
    """onDecodeError=fail: a record failed to decode."""


class _DeadLetters:
    """Publishes payloads that failed to decode to deadLetterTopicId."""

    def __init__(self, opts: SourceOptions, plan: SchemaPlan) -> None:
        self.opts, self.plan = opts, plan
        self._pub: Publisher | None = None

    def publish(self, batch: pa.RecordBatch, bad: pa.Array) -> None:
        if self._pub is None:
            self._pub = Publisher(PublisherConfig(topic=self.plan.decode.dead_letter_topic,
                                                  **self.opts.conn.client_kwargs()))
        out = dead_letter_batch(batch, bad, self.opts.subscription)
        self._pub.publish(out)
        self._pub.flush(timeout_ms=60_000)

    def close(self) -> None:
        if self._pub is not None:
            self._pub.close()
