"""Executor side of the source: one task = one virtual partition.

A task either replays its batch-log entry (a re-run of a batch Spark already
saw) or pulls fresh messages through the worker's subscriber for the query
(its StreamingPull streams stay open between tasks; pull.py), records them
in the batch log, hands their leases over to the driver, and yields the
Go-built Arrow batches to Spark with zero copies.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Iterator

import pyarrow as pa

from ....client import Subscriber
from ....errors import PubSubError
from ...worker_gc import freeze_long_lived
from ..batchlog import BatchLog
from ..options.schema_plan import SchemaPlan
from ..options.source import SourceOptions
from . import fault_points
from .id_window import IdFilter
from .on_decode_error import DeadLetters
from .partition import PubSubPartition
from .pull import PULL_BYTES_SHARE, Tally, pull
from .subscriber_config import subscriber_config
from .subscriber_pool import LATE_RETURN_S, POOL

log = logging.getLogger("pubsub_go.source")


def read_partition(opts: SourceOptions, part: PubSubPartition, plan: SchemaPlan | None = None
                   ) -> Iterator[pa.RecordBatch]:
    freeze_long_lived()
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
    started = time.time()

    def stopped() -> bool:
        """The query stopped since this task started (the driver's stop mark;
        its clock against ours, as in subscriber_pool)."""
        at = batch_log.stopped_at(part.gen)
        return at is not None and at >= started - LATE_RETURN_S

    tally = Tally()
    # Idle counts from the query's last activity too (subscriber_pool); a
    # task runs at most maxBatchDurationMs, which bounds the extra wait.
    with POOL.lease(config, opts.idle_ms(available_now=part.cutoff_us is not None) / 1000,
                    activity=lambda: batch_log.last_activity(part.gen),
                    max_wait_s=opts.max_batch_duration_ms / 1000,
                    stopped=lambda: batch_log.stopped_at(part.gen)) as sub:
        yield from _record(sub, opts, part, batch_log, plan, tally, stopped)
        if tally.stopped or tally.stalled or (tally.live and _grown(sub, opts)):
            POOL.discard(sub)


def _grown(sub: Subscriber, opts: SourceOptions) -> bool:
    """The subscriber opened catching-up streams (go/internal/subscriber/
    catchup.go), and its task has just handed over fresh rows: it is caught
    up, and extra streams cost live traffic latency, so it is closed (its
    prefetch nacked) and the next task opens one with streamsPerPartition."""
    return sub.stats().get("streams", 0) > opts.streams_per_partition


# Counters of Subscriber.stats() that a task reports as its own share.
_TASK_COUNTERS = ("pulled", "handed_out", "acked", "nacked", "extended", "redeliveries", "decode_errors",
                  "bytes_pulled", "streams_restarted", "flow_full_ms", "streams_down_ms", "late")


# The subscriber's counters when its last task ended, per pooled subscriber.
_MARKS: weakref.WeakKeyDictionary[Subscriber, dict[str, int]] = weakref.WeakKeyDictionary()


def _record(sub: Subscriber, opts: SourceOptions, part: PubSubPartition, batch_log: BatchLog,
            plan: SchemaPlan | None, tally: Tally, stopped: Callable[[], bool]) -> Iterator[pa.RecordBatch]:
    """Queues each batch for the log's temporary entry (written by the
    entry's thread) and yields it, so Spark works while the streams keep
    pulling and the entry is written. The entry is published once the task
    has handed out everything and all of it is written; until then no re-run
    can see it, and a failed attempt's output is discarded by Spark anyway."""
    # Counted from where the subscriber's previous task left off, so what a
    # pooled subscriber pulled between tasks is counted by the next one.
    before = _MARKS.get(sub) or {}
    dlq = DeadLetters(opts, plan) if plan is not None else None
    # The log's write queue holds what one pull may take (pull.py,
    # PULL_BYTES_SHARE: maxWorkerMemoryBytes / 16 by default, 16 MiB).
    entry = batch_log.writer(part.gen, part.batch, part.index,
                             max(1, opts.max_bytes_per_partition // PULL_BYTES_SHARE))
    recorded = batch_log.recorded_message_ids(part.gen)
    id_filter = IdFilter(opts.id_window, opts.batch_log_location) if opts.id_window is not None else None
    acks: list[pa.Array] = []
    published = False
    try:
        schema: pa.Schema | None = plan.output if plan else None
        for b, a, msg_ids in pull(sub, opts, part, plan, dlq, recorded, tally, stopped, id_filter):
            schema = b.schema
            if b.num_rows:
                entry.write(b, a, msg_ids)
                acks.append(a)
                yield b
        assert schema is not None
        all_acks = pa.concat_arrays(acks) if acks else pa.array([], pa.string())
        after = sub.stats()
        _MARKS[sub] = after
        stats = {**{k: after.get(k, 0) - before.get(k, 0) for k in _TASK_COUNTERS},
                 "held": after.get("held", 0), "buffered": after.get("buffered", 0),
                 "blocked_ms": after.get("blocked_ms", 0),
                 # late ones the subscriber released on arrival count as taken (docs/source.md, "Counters")
                 "taken": tally.taken + after.get("late", 0) - before.get("late", 0), "rows": tally.rows,
                 "dead_lettered": tally.dead_lettered, "duplicates": tally.duplicates,
                 "event_time_errors": tally.event_time_errors,
                 "drained": tally.drained, "quiet_ms": tally.quiet_ms,
                 "oldest_publish_us": tally.oldest_publish_us, "streams": after.get("streams", 0)}
        published = entry.publish(schema, stats)
        if published and id_filter is not None:
            id_filter.record(part.gen, part.batch, part.index)
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
        _hand_over(sub, opts, all_acks, lambda: batch_log.mark_handed_over(part.gen, part.batch, part.index))


def _hand_over(sub: Subscriber, opts: SourceOptions, acks: pa.Array, mark: Callable[[], None]) -> None:
    """After the entry is published its rows belong to the batch log: Spark
    sees exactly them on any re-run. So nothing here may fail the task: a
    failed lease hand-over is retried (bounded, inside the library) and then
    left to the driver, which sets the leases of every finished entry that
    lacks the hand-over mark (mark(), written once the modack succeeded)."""
    try:
        if opts.ack_on_commit:
            # The driver acks on commit and keeps the leases alive until then.
            # Modack first, while this subscriber still holds the ids: it
            # finds them in arrival order by comparison, where ids it no
            # longer holds would each cost a hash lookup (go/internal/
            # subscriber/held.go). The modack also records the long deadline,
            # so the lease loop does not shorten it before the release.
            # Release either way: a held id is extended until maxExtension.
            try:
                fault_points.at(fault_points.POST_RECORD_MODACK)
                sub.modack(acks, opts.commit_lease_seconds)
            finally:
                sub.release(acks)
            try:
                mark()
            except OSError as e:  # the driver sets the leases again: one modack more, nothing lost
                log.warning("recording the lease hand-over of %d messages failed: %s", len(acks), e)
        else:
            fault_points.at(fault_points.POST_RECORD_ACK)
            sub.ack(acks)
    except PubSubError as e:
        log.warning("handing over the leases of %d recorded messages failed; the driver renews them when it "
                    "reads the entry, and a redelivery of any of them is dropped as a duplicate: %s", len(acks), e)


