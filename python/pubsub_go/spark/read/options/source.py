"""Source options: parsed and validated on the driver before any data
moves, with errors that name the option and what would be right."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from ....client import subscription_path
from ... import aliases
from ...connection_options import ConnectionOptions, connection_options, resource_path
from ...option_table import SOURCE, table, text
from ...optparse import OptionError
from ..driver import start_position, subscription_lifecycle
from ..task import id_window
from . import attribute_columns
from .admission import TriggerLimits
from .decode_options import DecodeOptions, parse_decode

__all__ = ["DecodeOptions", "OptionError", "SourceOptions"]

# The source's options, as the option table gives them (Spark lower-cases keys).
OPTIONS = table(SOURCE)
DOCUMENTED = OPTIONS.documented()
CANONICAL = OPTIONS.canonical()
ALIASES = aliases.SOURCE_ALIASES

# maxWorkerMemoryBytes: what one query's subscriber may make an executor's
# Python worker hold. Its default keeps a worker under 512 MB (bound
# 1.25 x 256 + 150 = 470 MiB). Flow control (maxBytesPerPartition, which
# counts a per-message overhead besides the message bytes, see
# go/internal/subscriber/flowcontrol.go) gets a quarter of it: the rest
# covers what else scales with it: the batches a task has handed to Spark
# and the batch log but not yet freed, the next prefetch, and allocator
# slack; bench/tools/spark_memory.py measures the bound (bench/findings.md, Memory).
DEFAULT_WORKER_MEMORY = OPTIONS.default("maxWorkerMemoryBytes")
MIN_WORKER_MEMORY = OPTIONS["maxWorkerMemoryBytes"].min
FLOW_CONTROL_SHARE = 4  # maxBytesPerPartition defaults to maxWorkerMemoryBytes / this
ALIAS_NAMES = aliases.alias_names(ALIASES)


# maxRecordsPerPartition: rows per task; it bounds memory (a task's
# messages keep their bookkeeping until the task ends). Every micro-batch
# costs Spark a fixed amount whatever its size, so larger tasks are faster,
# up to the memory bound (bench/tools/spark_ab.py measures the rows/s,
# bench/tools/spark_memory.py the bound). Long tasks rely on the subscriber
# pool counting idle time from the query's activity (task/subscriber_pool.py):
# else a pooled subscriber would be closed as idle, nacking its prefetch, while
# its query's other task still runs.
MAX_RECORDS_PER_PARTITION = OPTIONS.default("maxRecordsPerPartition")


# maxWaitTimeMs: a streaming task that has rows ends when a wait for more
# runs out, so the wait is latency the rows pay, not a way to fill batches:
# shorter than the library's default (made for callers that want full
# batches), it lowers latency at no cost in rows/s at full load, since a
# loaded subscriber rarely waits (bench/tools/latency.py measures the latency,
# bench/tools/spark_cpu.py --option maxWaitTimeMs=... the rows/s).
MAX_WAIT_MS = OPTIONS.default("maxWaitTimeMs")


# catchUpStreamsPerPartition: a task's subscriber grows to this many
# StreamingPull streams while what arrives is older than the library's
# catch_up_lag_ms (go/internal/subscriber/catchup.go says why it starts
# small). A server may pace each stream, so a backlog is read at the pace of
# the streams reading it (bench/results/emulator_results.md, "Catching up").
# Live traffic never grows.
CATCH_UP_STREAMS = OPTIONS.default("catchUpStreamsPerPartition")


# batchSize: rows per pull, so per Arrow batch handed to Spark. Every batch
# costs the worker a fixed amount (PySpark's checks and socket write, our
# pull loop, a batch-log write), so larger ones are cheaper per row, up to
# a point past which they cost memory and gain nothing (bench/tools/spark_ab.py
# compares sizes). Tasks of any size get whole batches: a task's last, shorter
# pull must not shrink the subscriber's next batches, which would make every
# later pull small (tests/test_pull.py keeps it so). Large payloads are cut
# by bytes anyway (task/pull.py, PULL_BYTES_SHARE); a streaming task's wait
# is MAX_WAIT_MS whatever the size, so latency at low rates is unchanged.
DEFAULT_BATCH_SIZE = OPTIONS.default("batchSize")


def _max_bytes_per_partition(opts: Mapping[str, str]) -> int:
    """maxBytesPerPartition if set, else a share of maxWorkerMemoryBytes."""
    budget = OPTIONS.value(opts, "maxWorkerMemoryBytes")
    return OPTIONS.value(opts, "maxBytesPerPartition", default=budget // FLOW_CONTROL_SHARE)


def unknown_option_message(unknown: list[str], documented: list[str], fmt: str = "pubsub-go",
                           also: list[str] | None = None) -> str:
    """also: other names accepted (aliases), suggested too but not listed."""
    import difflib

    names = {n.lower(): n for n in [*(also or []), *documented]}
    parts = []
    for u in unknown:
        close = difflib.get_close_matches(u, list(names), n=1, cutoff=0.75)
        hint = f" (did you mean {names[close[0]]}?)" if close else ""
        parts.append(f"{u!r}{hint}")
    return (f"unknown option(s) {', '.join(parts)} for format {fmt}; "
            f"accepted options: {', '.join(documented)}")


# How long a subscriber must be able to receive with nothing arriving before
# a task takes the backlog as empty (docs/source.md, "End of backlog"). It
# must cover a new stream's first delivery and a redelivery burst (on
# Google's emulator the longest pause within a draining backlog was 0.2 s,
# a new stream's first message 0.1 s; real Pub/Sub can take seconds), and a
# pooled subscriber's idle time plus the redelivery of what it prefetched.
DEFAULT_SUBSCRIBER_IDLE_MS = OPTIONS.default("subscriberIdleMs")  # streaming; AvailableNow: 0 (idle_ms)
DEFAULT_QUIET_PERIOD_MS = OPTIONS.default("quietPeriodMs")

# pubsub_go.register(spark) puts the session's master here, in the
# environment Spark gives the source's Python processes.
SPARK_MASTER_ENV = "PUBSUB_GO_SPARK_MASTER"


def missing_batch_log_message(why: str) -> str:
    return (f"option batchLogLocation is required here ({why}): the driver and every executor read and write "
            "the batch log, so it must be a location they all share, e.g. gs://bucket/queries/q1/pubsub-log or "
            "hdfs:///queries/q1/pubsub-log (one per query). The default, a directory in the driver's home, "
            "only works with master local[...]")


@dataclass(frozen=True)
class SourceOptions:
    subscription: str  # projects/P/subscriptions/S
    conn: ConnectionOptions
    num_partitions: int
    batch_size: int
    max_wait_ms: int
    limits: TriggerLimits  # admission control (admission.py)
    max_records_per_partition: int
    max_batch_duration_ms: int
    ack_on_commit: bool
    batch_log_path: str  # see batch_log_location
    streams_per_partition: int
    catch_up_streams_per_partition: int
    max_outstanding_messages: int | None  # None: sized to what a task may hand out (task/subscriber_config.py)
    max_bytes_per_partition: int
    ack_deadline_seconds: int
    commit_lease_seconds: int
    subscriber_idle_ms: int | None  # None: the default for the trigger, see idle_ms
    quiet_period_ms: int
    decode: DecodeOptions | None = None  # schema mode
    # drainBacklog: read what was published before the query started, then
    # report no new data (pubsub_go.drain stops the query then): "read the
    # backlog, then stop" on every Spark, whatever the trigger (docs/source.md).
    drain_backlog: bool = False
    setup: subscription_lifecycle.SubscriptionSetup | None = None  # topicId: create the subscription; delete on stop
    start: start_position.StartPosition = start_position.StartPosition()  # seek on the first start
    # attributeColumns / timestampAttribute: columns derived from attributes
    derived: attribute_columns.AttributeColumns | None = None
    id_window: id_window.IdWindowOptions | None = None  # idAttribute: drop ids delivered within the window
    # Set when batchLogLocation was not given: the driver's host, where the
    # default (a local directory) is valid.
    batch_log_default_host: str | None = None

    @property
    def batch_log_location(self) -> str:
        """The batch log; the default local path fails on any other host
        (an executor of a cluster) instead of silently splitting the log."""
        if self.batch_log_default_host is not None and socket.gethostname() != self.batch_log_default_host:
            raise OptionError(missing_batch_log_message(f"executors run on other hosts than the driver "
                                                        f"({socket.gethostname()} vs {self.batch_log_default_host})"))
        return self.batch_log_path

    def idle_ms(self, available_now: bool) -> int:
        """How long an executor keeps a subscriber (its streams and what they
        prefetched) for the query's next task. Streaming: briefly, so that
        back-to-back micro-batches find warm streams. AvailableNow: not at
        all, so that every stream is closed cleanly before the job ends (a
        job that stops Spark right after kills the workers, and Google's
        emulator keeps a killed stream's messages leased to nobody)."""
        if self.subscriber_idle_ms is not None:
            return self.subscriber_idle_ms
        return 0 if available_now else DEFAULT_SUBSCRIBER_IDLE_MS

    @staticmethod
    def parse(options: Mapping[str, str]) -> SourceOptions:
        opts = aliases.resolve(options, ALIASES, CANONICAL)  # refuses what has no meaning here first
        unknown = sorted({str(k).lower() for k in options} - set(CANONICAL) - {a.lower() for a in ALIAS_NAMES})
        if unknown:
            raise OptionError(unknown_option_message(unknown, DOCUMENTED, also=ALIAS_NAMES))
        try:
            return SourceOptions._parse(opts)
        except OptionError as e:
            raise aliases.as_given(e, opts) from None

    @staticmethod
    def _parse(opts: Mapping[str, str]) -> SourceOptions:
        conn = connection_options(opts)
        sub_path = resource_path(opts, "subscriptionId", "subscription", subscription_path, conn)
        if "numpartitions" in opts and "parallelism" in opts and opts["numpartitions"] != opts["parallelism"]:
            raise OptionError("options numPartitions and parallelism are aliases; set one")
        parts_name = "numPartitions" if "numpartitions" in opts else "parallelism"
        # Spark's default parallelism is not visible to a Python data source;
        # the driver's core count equals it in local mode.
        num_parts = OPTIONS.value(opts, "numPartitions", default=os.cpu_count() or 1, given_as=parts_name)
        master = os.environ.get(SPARK_MASTER_ENV, "")
        if not text(opts, "batchLogLocation") and master and not master.startswith("local"):
            raise OptionError(missing_batch_log_message(f"the Spark master is {master}"))
        log_default = os.path.join(os.path.expanduser("~"), ".pubsub-go", "batchlog",
                                   sub_path.replace("projects/", "").replace("/subscriptions/", "."))
        # The lease of a message an executor holds but has not recorded:
        # extended every few seconds while the executor lives, so if it dies
        # the message is redelivered within this time. The default is the
        # shortest the library (and Pub/Sub) allows.
        ack_deadline = OPTIONS.value(opts, "ackDeadlineSeconds")
        project_id = sub_path.split("/")[1]
        rows_per_partition = OPTIONS.value(opts, "maxRecordsPerPartition")
        max_batch_duration_ms = OPTIONS.value(opts, "maxBatchDurationMs")
        # A task with no rows ends at maxBatchDurationMs, undrained: it could
        # never wait out a quiet period as long, and a query reading a backlog
        # to its end (AvailableNow, drainBacklog) would never end. The default
        # fits itself in (half the task's time); a set one that cannot fit is
        # refused.
        quiet_lo = OPTIONS["quietPeriodMs"].min or 0
        quiet_period_ms = OPTIONS.value(opts, "quietPeriodMs", default=min(
            DEFAULT_QUIET_PERIOD_MS, max(quiet_lo, max_batch_duration_ms // 2)))
        if quiet_period_ms >= max_batch_duration_ms:
            raise OptionError(f"option quietPeriodMs ({quiet_period_ms} ms) must be shorter than "
                              f"maxBatchDurationMs ({max_batch_duration_ms} ms): a task with no rows ends after "
                              "maxBatchDurationMs, so it could never see the quiet period that ends a backlog; "
                              "lower quietPeriodMs or raise maxBatchDurationMs")
        return SourceOptions(
            subscription=sub_path,
            conn=conn,
            num_partitions=num_parts,
            batch_size=OPTIONS.value(opts, "batchSize"),
            max_wait_ms=OPTIONS.value(opts, "maxWaitTimeMs"),
            limits=TriggerLimits.parse(opts, num_parts, rows_per_partition),
            max_records_per_partition=rows_per_partition,
            max_batch_duration_ms=max_batch_duration_ms,
            ack_on_commit=OPTIONS.value(opts, "ackOnCommit"),
            batch_log_path=text(opts, "batchLogLocation") or log_default,
            batch_log_default_host=None if text(opts, "batchLogLocation") else socket.gethostname(),
            streams_per_partition=OPTIONS.value(opts, "streamsPerPartition"),
            catch_up_streams_per_partition=OPTIONS.value(opts, "catchUpStreamsPerPartition"),
            # A 0 (the library's "not set", which the option accepts) is not set either.
            max_outstanding_messages=OPTIONS.value(opts, "maxOutstandingMessages") or None,
            max_bytes_per_partition=_max_bytes_per_partition(opts),
            ack_deadline_seconds=ack_deadline,
            commit_lease_seconds=OPTIONS.value(opts, "commitLeaseSeconds"),
            # None: the default, which depends on the trigger (idle_ms()).
            subscriber_idle_ms=(OPTIONS.value(opts, "subscriberIdleMs", default=0)
                                if "subscriberidlems" in opts else None),
            quiet_period_ms=quiet_period_ms,
            decode=parse_decode(opts, project_id),
            drain_backlog=OPTIONS.value(opts, "drainBacklog"),
            setup=subscription_lifecycle.SubscriptionSetup.parse(opts, project_id, ack_deadline),
            start=start_position.StartPosition.parse(opts, project_id),
            derived=_parse_derived(opts),
            id_window=id_window.IdWindowOptions.parse(opts),
        )


def _parse_derived(opts: Mapping[str, str]) -> attribute_columns.AttributeColumns | None:
    from ....schema import RAW_SCHEMA

    derived = attribute_columns.AttributeColumns.parse(opts, RAW_SCHEMA.names)
    if derived is not None and ("format" in opts or "decoder" in opts):
        raise OptionError("options attributeColumns and timestampAttribute apply to the raw schema; in schema "
                          "mode (format/decoder) select them from the attributes map instead, e.g. "
                          "attributes['source'] AS source")
    return derived
