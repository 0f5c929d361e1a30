"""Driver side of the source: planning (offsets, virtual partitions,
admission control) and the commit protocol (ack on commit, leases kept
alive until then). Reading happens in partition_reader.py on executors.

Offsets are synthetic: {"gen": <query generation>, "batch": <n>, ...}. A
batch's contents are whatever its tasks pulled, recorded in the batch log,
so re-running a batch replays the log instead of pulling anew.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructField, StructType

from . import faults
from .batchlog import BatchLog
from .lifecycle import delete_subscription, ensure_subscription
from .options import RAW_SCHEMA_DDL, OptionError, SourceOptions
from .partition_reader import PubSubPartition, read_partition, subscriber_config
from .runner_signals import stop_on_sigterm
from .schema_mode import METADATA, SchemaPlan, derive_schema
from .start_position import seek_on_first_start

log = logging.getLogger("pubsub_go.source")

RAW_SCHEMA = StructType([StructField(n, t, True) for n, t in METADATA.items()])


class PubSubInputPartition(InputPartition):
    def __init__(self, spec: PubSubPartition) -> None:
        super().__init__(spec.index)
        self.spec = spec


class PubSubDataSource(DataSource):
    """`pubsub-go`: spark.readStream / df.writeStream / df.write."""

    @classmethod
    def name(cls) -> str:
        return "pubsub-go"

    def schema(self) -> str | StructType:
        # Called at load() without a .schema(); with one, PySpark skips it
        # and streamReader validates at query start, still before any task.
        opts = {k.lower(): v for k, v in self.options.items()}
        if "topicid" in opts and "subscriptionid" not in opts:
            return RAW_SCHEMA_DDL  # writing (a read always names its subscription; topicId may create it)
        parsed = SourceOptions.parse(self.options)
        if parsed.decode is not None:
            return derive_schema(parsed.decode)
        return RAW_SCHEMA_DDL

    def streamReader(self, schema: StructType) -> PubSubStreamReader:
        return PubSubStreamReader(dict(self.options), schema)

    def reader(self, schema: StructType) -> Any:
        raise OptionError("pubsub-go is a streaming source: use spark.readStream.format('pubsub-go') "
                          "(with Trigger.AvailableNow for a one-off read of the backlog)")

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        from .sink import make_writer

        return make_writer(dict(self.options), schema, overwrite, streaming=True)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from .sink import make_writer

        return make_writer(dict(self.options), schema, overwrite, streaming=False)


class PubSubStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Constructed in several processes (the driver's runner, planning
    workers) and pickled to executors: construction only parses options;
    driver-only state (acker, lease keeper) starts lazily on the driver."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.opts = SourceOptions.parse(options)
        self.plan: SchemaPlan | None = None
        if self.opts.decode is not None:
            self.plan = SchemaPlan.build(self.opts.decode, schema)
        elif schema != RAW_SCHEMA:
            raise OptionError("a .schema(...) other than the raw schema needs schema mode: set option format "
                              "(json or avro) or decoder (a .wasm module) to decode payloads into it")
        self._driver: _DriverState | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "plan": self.plan, "_driver": None}

    def _state(self) -> _DriverState:
        if self._driver is None:
            if self.plan is not None:
                self.plan.check_on_driver()
            ensure_subscription(self.opts.subscription, self.opts.setup, self.opts.conn)  # topicId only
            stop_on_sigterm()  # else Spark's stop never reaches stop() below
            self._driver = _DriverState(self.opts)
        return self._driver

    # -- offsets -------------------------------------------------------------
    def initialOffset(self) -> dict:
        self._state()  # fails fast: NOT_FOUND for an unknown subscription
        # Spark asks for the initial offset only when the checkpoint has none:
        # a restart never seeks again.
        seek_on_first_start(self.opts.subscription, self.opts.start, self.opts.conn)
        return {"gen": uuid.uuid4().hex[:16], "batch": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_records_per_trigger:
            return ReadMaxRows(self.opts.max_records_per_trigger)
        if self.opts.max_bytes_per_trigger:
            return ReadMaxBytes(self.opts.max_bytes_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        st = self._state()
        # Only a batch this run planned and ran is evidence about the
        # backlog now: after a restart, the previous run's last batch says
        # nothing (messages may have been published since).
        prev = st.batch_summary(start["gen"], start["batch"]) if start.get("run") == st.run_id else None
        if st.cutoff_us and prev is not None and prev.drained:
            return start  # AvailableNow: nothing published before the start is left (docs/source.md)
        empty = prev is not None and prev.rows == 0 and prev.drained
        if empty and st.idle_reported != start["batch"]:
            # Report "no new data" once after an empty batch, so Spark can tell
            # the source is caught up (processAllAvailable, idle triggers);
            # the next call probes Pub/Sub again with a new batch.
            st.idle_reported = start["batch"]
            return start
        end: dict[str, Any] = {"gen": start["gen"], "batch": start["batch"] + 1, "run": st.run_id}
        if isinstance(limit, ReadMaxRows):
            end["maxRows"] = int(limit.max_rows)
        elif isinstance(limit, ReadMaxBytes):
            end["maxBytes"] = int(limit.max_bytes)
        if st.cutoff_us:
            end["cutoffUs"] = st.cutoff_us
        st.latest = end
        return end

    def prepareForTriggerAvailableNow(self) -> None:
        self._state().cutoff_us = time.time_ns() // 1000

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        if start.get("batch") == end.get("batch"):
            return []
        n = self.opts.num_partitions
        max_rows = end.get("maxRows")
        max_bytes = int(end.get("maxBytes", 0))
        parts = []
        for i in range(n):
            if max_rows is not None:
                rows = max_rows // n + (1 if i < max_rows % n else 0)
                if rows == 0:
                    continue  # fewer rows allowed than partitions
            else:
                rows = self.opts.max_records_per_partition
            parts.append(PubSubInputPartition(PubSubPartition(
                gen=end["gen"], batch=end["batch"], index=i, max_rows=rows,
                max_bytes=(max_bytes // n or 1) if max_bytes else 0, cutoff_us=int(end.get("cutoffUs", 0)),
            )))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PubSubInputPartition)
        return read_partition(self.opts, partition.spec, self.plan)

    # -- commit protocol ------------------------------------------------------
    def commit(self, end: dict) -> None:
        self._state().commit(end["gen"], end["batch"])

    def reportLatestOffset(self) -> dict | None:
        if self._driver is None:
            return None
        return self._driver.report()

    def stop(self) -> None:
        if self._driver is not None:
            # First: Spark may end this process soon after calling stop(), and
            # the last commit's acks do not matter for a throw-away subscription.
            delete_subscription(self.opts.subscription, self.opts.setup, self.opts.conn)  # if asked
            self._driver.stop()
            self._driver = None


@dataclass(frozen=True)
class _EntryInfo:
    """What the driver needs of a published log entry, which never changes."""

    ack_ids: pa.Array
    rows: int
    stats: dict[str, Any]


@dataclass(frozen=True)
class BatchSummary:
    """What a finished batch tells about the backlog: its rows, and whether
    every task ended on positive evidence that the backlog was empty."""

    rows: int
    drained: bool
    stats: dict[str, int]  # the tasks' counters, summed (docs/source.md, "Counters")


# Per-task counters summed into a batch's and the query's figures.
BACKLOG_NOTE = ("not reported: Pub/Sub's API has no backlog figure; see Cloud Monitoring's "
                "subscription/num_undelivered_messages and oldest_unacked_message_age")

# Their names in the progress report, where they differ (camelCase, as Spark's).
_METRIC_NAMES = {"dead_lettered": "deadLettered", "decode_errors": "decodeErrors", "bytes_pulled": "bytesPulled",
                 "streams_restarted": "streamsRestarted", "extended": "leaseExtensions"}
SUMMED = ("pulled", "taken", "rows", "late", "dead_lettered", "duplicates", "nacked", "extended",
          "redeliveries", "decode_errors", "bytes_pulled", "streams_restarted")


class _DriverState:
    """Lives in the driver's source runner: the acker (a subscriber that
    never pulls), the lease keeper and the live counters."""

    def __init__(self, opts: SourceOptions) -> None:
        from ..client import Subscriber

        self.opts = opts
        self.log = BatchLog(opts.batch_log_location)
        self.acker = Subscriber(subscriber_config(opts, pull=False))  # verifies the subscription
        self.cutoff_us = 0
        # Identifies this run of the query (offsets carry it): the
        # end-of-backlog decision only trusts batches of its own run.
        self.run_id = uuid.uuid4().hex[:12]
        self.idle_reported = -1
        self._summaries: dict[tuple[str, int], BatchSummary] = {}
        self.latest: dict[str, Any] | None = None
        self._read: dict[str, _EntryInfo] = {}  # entry path -> info: each entry is read once
        self.metrics: dict[str, int] = {"acked": 0, "leaseExtensions": 0, "pendingAcks": 0, "ackFailures": 0,
                                        "buffered": 0}
        for k in SUMMED:
            self.metrics[_METRIC_NAMES.get(k, k)] = 0
        self.last_batch: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._keeper = threading.Thread(target=self._keep_leases, name="pubsub-go-lease-keeper", daemon=True)
        self._keeper.start()
        # Spark calls commit() on its critical path (inside "walCommit",
        # before the next batch is planned); acking a batch takes an RPC per
        # 2500 messages, so it runs on a thread of its own.
        self._commit_wanted: tuple[str, int] | None = None
        self._commit_cv = threading.Condition()
        self._committer = threading.Thread(target=self._commit_loop, name="pubsub-go-committer", daemon=True)
        self._committer.start()

    def _entries(self, gen: str, batch: int) -> list[_EntryInfo]:
        out = []
        for path in self.log.entry_paths(gen, batch):
            info = self._read.get(path)
            if info is None:
                e = self.log.read_path(path)
                # Concatenating copies the ack ids out of the entry's buffers,
                # so the cache does not keep the rows alive.
                acks = pa.concat_arrays([e.ack_ids, e.ack_ids.slice(0, 0)])
                info = self._read[path] = _EntryInfo(acks, e.data.num_rows, e.stats)
            out.append(info)
        return out

    def batch_summary(self, gen: str, batch: int) -> BatchSummary | None:
        """The summary of a batch whose tasks all published their entries;
        kept after the committer removes the entries."""
        with self._lock:
            return self._summary(gen, batch, renew=True)

    def _summary(self, gen: str, batch: int, renew: bool = False) -> BatchSummary | None:
        """The caller holds _lock."""
        key = (gen, batch)
        if key in self._summaries:
            return self._summaries[key]
        entries = self._entries(gen, batch)
        if not entries:
            return None
        if renew and self.opts.ack_on_commit:
            self._renew([e.ack_ids for e in entries if len(e.ack_ids)])
        summed = {k: sum(int(e.stats.get(k, 0)) for e in entries) for k in SUMMED}
        summed["buffered"] = sum(int(e.stats.get("buffered", 0)) for e in entries)
        out = BatchSummary(rows=sum(e.rows for e in entries),
                           drained=all(e.stats.get("drained", False) for e in entries), stats=summed)
        self._summaries[key] = out
        # Counted once, when the batch is first seen finished (not at commit,
        # which runs after the next progress report).
        for k in SUMMED:
            name = _METRIC_NAMES.get(k, k)
            self.metrics[name] = self.metrics.get(name, 0) + summed[k]
        self.metrics["buffered"] = summed["buffered"]
        self.last_batch = {"batch": batch, **summed}
        for old in [k for k in self._summaries if k[0] != gen or k[1] < batch - 8]:
            del self._summaries[old]  # only the latest batches are ever asked for
        return out

    def _renew(self, ids: list[pa.Array]) -> None:
        """Takes over the leases of a finished batch right away: its tasks'
        own hand-over may have failed, and the lease keeper only runs every
        few minutes."""
        if not ids:
            return
        try:
            acks = pa.concat_arrays(ids)
            self.acker.modack(acks, self.opts.commit_lease_seconds)
            self.metrics["leaseExtensions"] += len(acks)
        except Exception as e:  # the tasks' hand-over may have worked; the keeper retries
            log.warning("renewing the leases of a finished batch failed: %s", e)

    def commit(self, gen: str, upto: int) -> None:
        """Acks every logged batch <= upto of gen, on the committer thread."""
        with self._commit_cv:
            self._commit_wanted = (gen, upto)
            self._commit_cv.notify()

    def _commit_loop(self) -> None:
        while True:
            with self._commit_cv:
                while self._commit_wanted is None and not self._stop.is_set():
                    self._commit_cv.wait()
                wanted, self._commit_wanted = self._commit_wanted, None
            if wanted is not None:
                try:
                    self.commit_now(*wanted)
                except Exception as e:  # the entries stay: the next commit retries
                    log.warning("committing batch %d failed, will retry at the next commit: %s", wanted[1], e)
            elif self._stop.is_set():
                return

    def commit_now(self, gen: str, upto: int) -> None:
        with self._lock:
            for batch in self.log.batches(gen):
                if batch > upto:
                    continue
                entries = self._entries(gen, batch)
                self._summary(gen, batch)  # kept for latestOffset once the entries are gone
                ids = [e.ack_ids for e in entries if len(e.ack_ids)]
                try:
                    if ids and self.opts.ack_on_commit:
                        acks = pa.concat_arrays(ids)
                        faults.inject("commit_ack")
                        res = self.acker.ack(acks)
                        # Exactly-once delivery: ids the service refused for good
                        # were not acked (they come back); never count them as acked.
                        self.metrics["acked"] += res["done"]
                        rejected = sum(res["rejected"].values())
                        if rejected:
                            self.metrics["ackRejected"] = self.metrics.get("ackRejected", 0) + rejected
                            log.warning("batch %d: the service rejected %d of %d acks (%s); those messages will "
                                        "be redelivered", batch, rejected, len(acks), res["rejected"])
                except Exception as e:
                    # Kept in the log: the next commit retries. Leases are still kept alive.
                    self.metrics["ackFailures"] += 1
                    log.warning("acking batch %d failed, will retry at the next commit: %s", batch, e)
                    continue
                for path in self.log.entry_paths(gen, batch):
                    self._read.pop(path, None)
                self.log.remove_batch(gen, batch)

    def _pending_entries(self) -> list[_EntryInfo]:
        """The entries of every batch in the log (recorded, not yet acked);
        the caller holds _lock."""
        if self.latest is None:
            return []
        gen = self.latest["gen"]
        return [e for batch in self.log.batches(gen) for e in self._entries(gen, batch)]

    def _pending_ack_ids(self) -> list[pa.Array]:
        return [e.ack_ids for e in self._pending_entries() if len(e.ack_ids)]

    def _keep_leases(self) -> None:
        period = max(5.0, self.opts.commit_lease_seconds / 4)
        while not self._stop.wait(period):
            if not self.opts.ack_on_commit:
                continue
            try:
                with self._lock:
                    ids = self._pending_ack_ids()
                    if ids:
                        acks = pa.concat_arrays(ids)
                        self.acker.modack(acks, self.opts.commit_lease_seconds)
                        self.metrics["leaseExtensions"] += len(acks)
            except Exception as e:
                log.warning("extending the leases of uncommitted batches failed: %s", e)

    def report(self) -> dict[str, Any]:
        with self._lock:
            entries = self._pending_entries()  # one listing of the log per report
            self.metrics["pendingAcks"] = sum(len(e.ack_ids) for e in entries) if self.opts.ack_on_commit else 0
            out: dict[str, Any] = dict(self.latest or {})
            out.update(self.metrics)
            out["oldestUnackedAgeMs"] = _oldest_age_ms(entries)
            # Pub/Sub's API reports no backlog (Cloud Monitoring's
            # num_undelivered_messages does, minutes late); say so rather
            # than print 0.
            out["backlogMessages"] = None
            out["backlogNote"] = BACKLOG_NOTE
            out["lastBatch"] = dict(self.last_batch)
            return out

    def stop(self) -> None:
        with self._commit_cv:
            self._stop.set()
            self._commit_cv.notify()
        # The last commit's acks go out before the acker closes.
        self._committer.join(timeout=120)
        self._keeper.join(timeout=10)
        self.acker.close()


def _oldest_age_ms(entries: list[_EntryInfo]) -> int | None:
    """Age of the oldest message in entries (handed to Spark, not acked
    yet), by publish time; None if there is none."""
    oldest = [o for e in entries if e.rows and (o := int(e.stats.get("oldest_publish_us", 0))) > 0]
    if not oldest:
        return None
    return max(0, (time.time_ns() // 1000 - min(oldest)) // 1000)
