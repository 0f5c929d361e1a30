"""A task's pull loop: takes batches from its subscriber until a cap, the
time budget or the end of the backlog ends the task, dropping redeliveries
of recorded messages and applying onDecodeError. (Messages published after
an AvailableNow run's start never get here: the subscriber releases them
where they arrive, go/internal/subscriber/cutoff.go, and counts them in its
stats' "late".)

The end of the backlog needs positive evidence: the subscriber has been able
to receive for quietPeriodMs with nothing arriving (docs/source.md, "End of
backlog").

Two things end a task early, and each has the subscriber closed when the task
gives it back rather than kept (subscriber_pool.discard):
- its query stopped (the driver's stop mark): Spark kills a stopped query's
  running tasks and, a moment later (spark.python.task.killTimeout, 2 s), the
  worker of a task still running, with SIGKILL, which nothing in the worker
  outlives; a task that ends first half-closes its streams (Google's
  emulator keeps leasing to a stream cut without a half-close, for good);
- its subscriber has been unable to receive (flow control full with nothing
  to hand out, or a stream out of its session) for longer than STALL_BOUND_MS
  while the task waited for rows: logged with the reason, and the next task
  opens a fresh one."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from .... import contract
from ....client import Subscriber
from ....errors import PubSubError
from ..batchlog import RecordedIds
from ..options.schema_plan import SchemaPlan, limit_hint
from ..options.source import SourceOptions
from .id_window import IdFilter
from .on_decode_error import DeadLetters, handle_decode_errors
from .partition import PubSubPartition

log = logging.getLogger("pubsub_go.source")


@dataclass
class Tally:
    """What a task did with the messages it took from its subscriber:
    taken = rows + dead_lettered + duplicates (with the subscriber's "late",
    the task's "taken" in docs/source.md, "Counters")."""

    taken: int = 0  # rows handed to the task by the subscriber
    rows: int = 0  # handed to Spark (and recorded)
    dead_lettered: int = 0  # undecodable, published to the dead-letter topic and acked
    duplicates: int = 0  # redeliveries of messages already recorded, dropped and acked
    event_time_errors: int = 0  # timestampAttribute: rows whose attribute was missing or not a time
    drained: bool = False  # ended on positive evidence that the backlog is empty
    quiet_ms: int = 0  # the subscriber's quiet time when the task ended
    oldest_publish_us: int = 0  # publish time of the oldest row handed to Spark; 0: none
    newest_publish_us: int = 0  # publish time of the newest row of the last pull that had rows; 0: none
    stopped: bool = False  # ended because its query stopped
    stalled: bool = False  # ended because its subscriber could not receive for STALL_BOUND_MS
    live: bool = False  # streaming: handed over fresh rows at a pause (not catching up)


# How often a waiting task looks for its query's stop mark, in seconds: well
# inside Spark's 2 s between killing a stopped query's task and killing its
# worker, and one file status per look (a round trip on an object store),
# taken only while the task waits with nothing arriving.
STOP_CHECK_S = 0.5

# A subscriber unable to receive this long while its task waits for rows is
# stalled: longer than the subscriber's reconnect backoff between attempts
# (go/internal/rpc, at most 10 s) so that a stream coming back is not taken
# for one, and shorter than a micro-batch's time budget (maxBatchDurationMs,
# 10 s by default) plus the next one's, so that a stall costs at most one
# empty batch before a fresh subscriber takes over.
STALL_BOUND_MS = 15_000


def pull(sub: Subscriber, opts: SourceOptions, part: PubSubPartition, plan: SchemaPlan | None,
          dlq: DeadLetters | None, recorded: RecordedIds, tally: Tally,
          stopped: Callable[[], bool] = lambda: False, id_filter: IdFilter | None = None
          ) -> Iterator[tuple[pa.RecordBatch, pa.Array, pa.Array]]:
    """Yields (batch, ack ids, message ids) until a cap, the time budget,
    (streaming) a wait that ran out after rows were taken, or positive
    evidence of an empty backlog ends the task; sets tally.drained for the
    last. Also ends, setting tally.stopped or tally.stalled, when stopped()
    says the query stopped or the subscriber cannot receive (see above).

    A task that has yielded nothing does not end when a wait runs out: a
    new stream, a reconnect or a redelivery burst can take seconds, so it
    keeps waiting until the subscriber has been able to receive for
    quietPeriodMs with nothing arriving (or the time budget runs out)."""
    nbytes = 0
    deadline = time.monotonic() + opts.max_batch_duration_ms / 1000
    wait_until_ms = part.wait_until_ms
    if wait_until_ms is not None:  # min...PerTrigger: may wait past the budget, up to maxTriggerDelay
        deadline = max(deadline, time.monotonic() + (wait_until_ms - time.time() * 1000) / 1000)

    def short() -> bool:
        """Still waiting for minRecordsPerTrigger's or minBytesPerTrigger's share (options/admission.py)."""
        if wait_until_ms is None or time.time() * 1000 >= wait_until_ms:
            return False
        return ((part.min_rows is not None and tally.rows < part.min_rows)
                or (part.min_bytes is not None and nbytes < part.min_bytes))

    max_pull_bytes = max(1, opts.max_bytes_per_partition // PULL_BYTES_SHARE)
    row_bytes = _row_bytes_so_far(sub)
    next_stop_check = time.monotonic() + STOP_CHECK_S
    last_rows_at = time.monotonic()  # when a pull last returned rows
    while True:
        want = min(opts.batch_size, part.max_rows - tally.rows)
        if want <= 0:
            return
        if row_bytes:
            want = min(want, max(1, max_pull_bytes // row_bytes))
            if part.max_bytes is not None:  # maxBytesPerTrigger's share: do not overshoot it by a whole pull
                want = min(want, max(1, (part.max_bytes - nbytes) // row_bytes))
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
            last_rows_at = time.monotonic()
            row_bytes = max(1, b.nbytes // b.num_rows)
            b, a = _drop_recorded(sub, b, a, recorded, tally)
            if id_filter is not None:
                b, a = _drop_seen_ids(sub, b, a, id_filter, tally)
        if plan is not None and b.num_rows:
            b, a, dead = handle_decode_errors(sub, opts, plan, dlq, b, a)
            tally.dead_lettered += dead
        ids = b.column("message_id")
        if b.num_rows:
            span = pc.min_max(b.column("publish_time").cast(pa.int64()))
            oldest, newest = span["min"].as_py(), span["max"].as_py()
            if oldest is not None:
                tally.oldest_publish_us = min(tally.oldest_publish_us or oldest, oldest)
                tally.newest_publish_us = newest
        if plan is not None:
            b = plan.project(b)
        elif opts.derived is not None:
            b, bad = opts.derived.add(b)
            tally.event_time_errors += bad
        tally.rows += b.num_rows
        nbytes += b.nbytes
        yield b, a, ids
        if got.waited_out:
            st = sub.stats()
            quiet = int(st.get("quiet_ms", 0))
            tally.quiet_ms = quiet
            if quiet >= opts.quiet_period_ms and not short():
                tally.drained = True
                return
            if not b.num_rows and _stalled(st, part):
                tally.stalled = True
                return
            now = time.monotonic()
            if now >= next_stop_check:
                next_stop_check = now + STOP_CHECK_S
                if stopped():
                    tally.stopped = True
                    return
            if tally.rows and part.cutoff_us is None and not short() and not _catching_up(tally, st, last_rows_at):
                # Streaming: hand over what there is (latency); the next batch
                # waits for more. AvailableNow reads on until the backlog is
                # drained or the task's budget is spent (throughput: a bursty
                # server pauses for longer than maxWaitTimeMs all the time),
                # and so does a streaming task that is catching up.
                tally.live = _fresh(tally)
                return
        if time.monotonic() >= deadline or (part.max_bytes is not None and nbytes >= part.max_bytes):
            return


# Catching up: a streaming task whose newest row was published more than
# CATCH_UP_LAG_MS ago (the library's catch_up_lag_ms, the lag at which its
# subscriber adds streams) is reading a backlog, not live traffic, so ending its
# micro-batch at the first pause would buy those rows no latency (they are
# late already) and cost a whole micro-batch's fixed price per burst. Such a
# task reads on through pauses of up to CATCH_UP_GAP_MS, within its
# maxBatchDurationMs and caps, as AvailableNow does: a server that sends a
# backlog in bursts (Google's emulator pauses longer than maxWaitTimeMs
# between them) would otherwise get a micro-batch per burst
# (bench/results/emulator_results.md, "Catching up"). Live traffic stays
# well under CATCH_UP_LAG_MS old, so those tasks still end at the first wait
# that runs out.
# The lag is measured against this machine's clock, so a clock more than
# CATCH_UP_LAG_MS ahead of Pub/Sub's makes every task read on for up to
# CATCH_UP_GAP_MS past its last rows: that much latency, never a lost row.
CATCH_UP_LAG_MS = contract.limit("subscriber_config", "catch_up_lag_ms").default
CATCH_UP_GAP_MS = contract.source_task_limit("catch_up_gap_ms")


def _catching_up(tally: Tally, st: dict[str, int], last_rows_at: float) -> bool:
    """A streaming task whose rows are old reads on while the pause since its
    last rows is short and its subscriber can receive (flow control open,
    streams live: otherwise nothing more can come, so it hands over)."""
    if not tally.newest_publish_us or int(st.get("blocked_ms", 0)) > 0:
        return False
    if (time.monotonic() - last_rows_at) * 1000 >= CATCH_UP_GAP_MS:
        return False
    return time.time() * 1_000_000 - tally.newest_publish_us > CATCH_UP_LAG_MS * 1000


def _fresh(tally: Tally) -> bool:
    """The task's newest row is well inside the catching-up lag (half of
    it: a lag hovering near the line does not flip a subscriber between
    growing and being replaced at every task)."""
    return time.time() * 1_000_000 - tally.newest_publish_us < CATCH_UP_LAG_MS * 1000 / 2


# A pull takes at most maxBytesPerPartition / this many bytes (16 MiB by
# default), whatever batchSize says. Each pulled batch is alive three times
# over while the streams refill flow control behind it: in Spark's hands, in
# the batch log's write queue (run.py sizes it by this share too), and
# freed but not yet returned by the allocator. Cut by rows alone, large
# payloads (a 1,000-row batch of 100 KB messages is 100 MB) would take a
# worker past maxWorkerMemoryBytes' bound (bench/tools/spark_memory.py
# measures it); small ones are under the cap anyway.
PULL_BYTES_SHARE = 4


def _stalled(st: dict[str, int], part: PubSubPartition) -> bool:
    """The subscriber has been unable to receive for STALL_BOUND_MS; logs why."""
    blocked = int(st.get("blocked_ms", 0))
    if blocked < STALL_BOUND_MS:
        return False
    log.warning("partition %d of batch %d: its subscriber could not receive for %.1f s (since it opened: flow "
                "control full %.1f s, a stream out of its session %.1f s; held=%d buffered=%d, streams restarted "
                "%d times); ending the task, and the next one opens a fresh subscriber",
                part.index, part.batch, blocked / 1000, st.get("flow_full_ms", 0) / 1000,
                st.get("streams_down_ms", 0) / 1000, st.get("held", 0), st.get("buffered", 0),
                st.get("streams_restarted", 0))
    return True


def _row_bytes_so_far(sub: Subscriber) -> int:
    """The subscriber's bytes per message so far (a pooled one has pulled
    for earlier tasks), so a task's first pull is sized too; 0: none yet."""
    st = sub.stats()
    return st["bytes_pulled"] // st["pulled"] if st.get("pulled") else 0


def _drop_recorded(sub: Subscriber, b: pa.RecordBatch, a: pa.Array, recorded: RecordedIds,
                   tally: Tally) -> tuple[pa.RecordBatch, pa.Array]:
    """Drops redeliveries of messages already in the batch log (recorded,
    not yet acked: a lease hand-over or an ack that failed). Replaying the
    log delivers them; reading them again would deliver them twice. The
    redelivered copy is acked: the recorded one is Spark's."""
    dup = recorded.mask(b.column("message_id"))
    if dup is None:
        return b, a
    dups = a.filter(dup)
    try:
        sub.ack(dups)
    except PubSubError as e:  # they come back and are dropped again
        log.warning("acking %d redelivered duplicates failed: %s", len(dups), e)
    tally.duplicates += len(dups)
    keep = pc.invert(dup)
    return b.filter(keep), a.filter(keep)


def _drop_seen_ids(sub: Subscriber, b: pa.RecordBatch, a: pa.Array, ids: IdFilter,
                   tally: Tally) -> tuple[pa.RecordBatch, pa.Array]:
    """idAttribute: drops (and acks) messages whose id was delivered within
    the window (id_window.py); counted as duplicates."""
    keep = ids.keep(b.column("attributes"))
    if keep is None:
        return b, a
    dups = a.filter(pc.invert(keep))
    try:
        sub.ack(dups)
    except PubSubError as e:  # they come back and are dropped again
        log.warning("acking %d messages with an idAttribute already delivered failed: %s", len(dups), e)
    tally.duplicates += len(dups)
    return b.filter(keep), a.filter(keep)
