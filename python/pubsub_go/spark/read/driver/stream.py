"""The source's stream reader, on the driver: offsets, planning a
micro-batch into tasks (admission control), and handing commits to the
driver's state (state.py). Tasks read on executors (task/run.py).

One class for every supported PySpark (spark/compat.py). On 4.2+ Spark
passes latestOffset its start and read limit and calls reportLatestOffset
and prepareForTriggerAvailableNow. On 4.0/4.1 it calls latestOffset() with
no arguments, so the reader keeps its own start (the last end it returned
or Spark handed to partitions/commit in this run), takes the read limit
from its options, and shows its figures in the offset itself (key
"progress" of sources[].endOffset)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from ....configs import TopicSchema
from ...compat import (
    ADMISSION_CONTROL,
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from ...optparse import OptionError
from ..options.admission import share
from ..options.decode_options import FORMATS
from ..options.schema_plan import RAW_SPARK_SCHEMA, SchemaPlan
from ..options.source import SourceOptions
from ..task.partition import PubSubInputPartition, PubSubPartition
from ..task.run import read_partition
from .offsets import BatchOffset
from .runner_signals import stop_on_sigterm
from .start_position import seek_on_first_start
from .state import DriverState
from .subscription_lifecycle import delete_subscription, ensure_subscription
from .topic_schema import fetch_topic_schema


class PubSubStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Constructed in several processes (the driver's runner, planning
    workers) and pickled to executors: construction only parses options;
    driver-only state (acker, lease keeper) starts lazily on the driver."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.opts = SourceOptions.parse(options)
        self.plan: SchemaPlan | None = None
        if self.opts.decode is not None:
            self.plan = SchemaPlan.build(self.opts.decode, schema)
        elif schema != (self.opts.derived.extend(RAW_SPARK_SCHEMA) if self.opts.derived else RAW_SPARK_SCHEMA):
            raise OptionError("a .schema(...) other than the raw schema needs schema mode: set option format "
                              f"({' or '.join(FORMATS)}), schemaFrom=topic or decoder (a .wasm module) to "
                              "decode payloads into it")
        self._driver: DriverState | None = None
        self._topic_schema: TopicSchema | None = None  # schemaFrom=topic, read in _state()
        # PySpark 4.0/4.1 (no start passed to latestOffset): the end of the
        # last batch this run knows of (returned, planned or committed).
        self._known_end: BatchOffset | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "plan": self.plan, "_driver": None, "_known_end": None, "_topic_schema": None}

    def _state(self) -> DriverState:
        if self._driver is None:
            if self.plan is not None:
                if self.plan.decode.schema_from_topic:
                    self._topic_schema = fetch_topic_schema(self.opts)
                self.plan.check_on_driver(self._topic_schema)
            ensure_subscription(self.opts.subscription, self.opts.setup, self.opts.conn)  # topicId only
            stop_on_sigterm()  # else Spark's stop never reaches stop() below
            self._driver = DriverState(self.opts)
            if self.opts.drain_backlog:
                # Read what was published before this run started, then report
                # no new data, whatever the trigger (docs/source.md).
                self._driver.cutoff_us = time.time_ns() // 1000
        return self._driver

    # -- offsets -------------------------------------------------------------
    def initialOffset(self) -> dict:
        self._state()  # fails fast: NOT_FOUND for an unknown subscription
        # Spark asks for the initial offset only when the checkpoint has none:
        # a restart never seeks again.
        seek_on_first_start(self.opts.subscription, self.opts.start, self.opts.conn)
        return BatchOffset.initial().to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        # One ReadLimit is all Spark takes from a Python source; with both
        # caps set the source applies the other one itself (_caps).
        lim = self.opts.limits
        if lim.max_rows is not None:
            return ReadMaxRows(lim.max_rows)
        if lim.max_bytes is not None:
            return ReadMaxBytes(lim.max_bytes)
        return ReadAllAvailable()

    def _caps(self, limit: ReadLimit | None) -> tuple[int | None, int | None]:
        """(max rows, max bytes) of the next micro-batch. Both caps apply
        together (the stricter wins per task), unless Spark overrides the
        default limit with ReadAllAvailable (Trigger.Once)."""
        lim = self.opts.limits
        if ADMISSION_CONTROL and isinstance(limit, ReadAllAvailable):
            return None, None
        return lim.max_rows, lim.max_bytes

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        """PySpark 4.2+ passes start and limit; 4.0/4.1 pass neither (see
        the module's docstring). The defaults keep the one signature that
        4.2+ takes for admission control (it inspects the parameters)."""
        st = self._state()
        if start is None:
            return self._latest_without_start(st)
        begin = BatchOffset.from_json(start)
        max_rows, max_bytes = self._caps(limit)
        end = self._next(st, begin, max_rows, max_bytes)
        return start if end is None else end.to_json()

    def _next(self, st: DriverState, begin: BatchOffset, max_rows: int | None,
              max_bytes: int | None) -> BatchOffset | None:
        """The end of the next micro-batch after begin, or None for "no new data"."""
        st.resume(begin.gen)
        # Only a batch this run planned and ran is evidence about the
        # backlog now: after a restart, the previous run's last batch says
        # nothing (messages may have been published since).
        prev = st.batch_summary(begin.gen, begin.batch) if begin.run == st.run_id else None
        if st.cutoff_us is not None and prev is not None and prev.drained:
            return None  # AvailableNow/drainBacklog: nothing published before the start is left
        empty = prev is not None and prev.rows == 0 and prev.drained
        if empty and st.idle_reported != begin.batch:
            # Report "no new data" once after an empty batch, so Spark can tell
            # the source is caught up (processAllAvailable, idle triggers);
            # the next call probes Pub/Sub again with a new batch.
            st.idle_reported = begin.batch
            return None
        lim = self.opts.limits
        # AvailableNow/drainBacklog read what is there: no minimum to wait for.
        wait = (lim.min_rows is not None or lim.min_bytes is not None) and st.cutoff_us is None
        end = BatchOffset(
            gen=begin.gen, batch=begin.batch + 1, run=st.run_id, max_rows=max_rows, max_bytes=max_bytes,
            cutoff_us=st.cutoff_us, min_rows=lim.min_rows if wait else None,
            min_bytes=lim.min_bytes if wait else None,
            wait_until_ms=time.time_ns() // 1_000_000 + lim.max_delay_ms if wait else None,
        )
        st.latest = end
        return end

    def _latest_without_start(self, st: DriverState) -> dict:
        """PySpark 4.0/4.1. Within a run the start is the last end this
        reader returned (Spark always takes it) or was handed (a batch
        re-run on restart calls partitions() first). A run whose first call
        this is starts a new generation of batch numbers: the previous
        run's batches are committed by Spark's commit() with their own
        offsets, and the batch log keeps generations apart. The trigger's
        limits come from the options (Spark passes none)."""
        begin = self._known_end
        if begin is None:
            begin = BatchOffset.initial()
        max_rows, max_bytes = self._caps(None)
        end = self._next(st, begin, max_rows, max_bytes)
        if end is None:
            self._known_end = begin
            return begin.to_json()
        self._known_end = end
        out = end.to_json()
        # No reportLatestOffset here: the figures ride in the offset, which
        # Spark shows as sources[].endOffset (unused when read back).
        out["progress"] = st.report()
        return out

    def prepareForTriggerAvailableNow(self) -> None:
        self._state().cutoff_us = time.time_ns() // 1000

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        first, last = BatchOffset.from_json(start), BatchOffset.from_json(end)
        if not ADMISSION_CONTROL and self._known_end is None:
            self._known_end = last  # a batch re-run on restart (4.0/4.1): the next starts after it
        # A batch re-run on restart comes here before any latestOffset: its
        # tasks must not find the previous run's stop mark (they would end
        # at their first wait, as if this run had stopped).
        self._state().resume(last.gen)
        if (first.gen, first.batch) == (last.gen, last.batch):
            return []
        n = self.opts.num_partitions
        parts = []
        for i in range(n):
            if last.max_rows is not None:
                rows = share(last.max_rows, n, i)
                if rows == 0:
                    continue  # fewer rows allowed than partitions
            else:
                rows = self.opts.max_records_per_partition
            parts.append(PubSubInputPartition(PubSubPartition(
                gen=last.gen, batch=last.batch, index=i, max_rows=rows,
                max_bytes=max(1, last.max_bytes // n) if last.max_bytes is not None else None,
                cutoff_us=last.cutoff_us,
                min_rows=min(rows, share(last.min_rows, n, i)) if last.min_rows is not None else None,
                min_bytes=share(last.min_bytes, n, i) if last.min_bytes is not None else None,
                wait_until_ms=last.wait_until_ms, topic_schema=self._topic_schema,
            )))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PubSubInputPartition)
        return read_partition(self.opts, partition.spec, self.plan)

    # -- commit protocol ------------------------------------------------------
    def commit(self, end: dict) -> None:
        last = BatchOffset.from_json(end)
        if not ADMISSION_CONTROL and self._known_end is None:
            self._known_end = last
        self._state().commit(last.gen, last.batch)

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
