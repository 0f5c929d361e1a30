"""The `pubsub-go` sink: Arrow writers for df.write and df.writeStream.

Writers are built on the driver (options and schema are checked there,
before any task) and pickled to executors. The Go publisher is opened
inside write(), in the executor's Python worker: the Go runtime must not be
loaded before PySpark forks its workers. The worker keeps it for its next
tasks (publisher_pool.py, `publisherIdleMs`).

Delivery is at least once. write() returns only after the server has
acknowledged every message of the task, so a committed batch is durable in
Pub/Sub; a task that fails after some messages were acknowledged is
retried and publishes them again. With `idAttribute` each message carries
an id that a retry reproduces, `<queryId>-<batchId>-<partition>-<row>`
(streaming) or `<writeId>-0-<partition>-<row>` (df.write), so consumers
can drop the duplicates.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ..compat import STREAM_ARROW_WRITER
from ..optparse import OptionError
from ..worker_gc import freeze_long_lived
from .options import TOPIC_COLUMN, SinkOptions, check_ordering, validate_sink_schema
from .routing import publish_all

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import TaskContext
    from pyspark.sql import Row

__all__ = ["PubSubArrowWriter", "PubSubStreamArrowWriter", "PubSubStreamRowWriter", "PublishCommitMessage",
           "make_writer"]

log = logging.getLogger("pubsub_go.sink")

# Local properties Spark sets on the tasks of a micro-batch.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"

AT_LEAST_ONCE = ("the pubsub-go sink is at least once: messages the server already acknowledged stay "
                 "published and cannot be withdrawn; the retried tasks publish them again (with the same "
                 "ids when idAttribute is set, so consumers can drop the duplicates)")


@dataclass
class PublishCommitMessage(WriterCommitMessage):
    """What one task published; every message was acknowledged by the server."""

    partition_id: int
    messages: int
    bytes: int
    retries: int
    id_prefix: str | None = None


def make_writer(options: dict[str, str], schema: StructType, overwrite: bool,
                streaming: bool) -> PubSubArrowWriter | PubSubStreamArrowWriter | PubSubStreamRowWriter:
    """Called by PubSubDataSource.writer()/streamWriter() on the driver:
    validates everything that can be checked without data or network."""
    if overwrite:
        raise OptionError(
            "pubsub-go can only append to a topic: use "
            + ("outputMode('append')" if streaming else "mode('append')")
            + " (a Pub/Sub topic cannot be truncated or overwritten)"
        )
    opts = SinkOptions.parse(options, routed=TOPIC_COLUMN in schema.fieldNames())
    validate_sink_schema(schema, opts)
    check_ordering(opts, schema)
    if opts.schema_from_topic:
        from .topic_schema import with_topic_schema

        opts = with_topic_schema(opts, schema)
    if streaming:
        if STREAM_ARROW_WRITER is None:  # PySpark 4.0: rows, gathered into Arrow batches here
            return PubSubStreamRowWriter(opts, schema)
        return PubSubStreamArrowWriter(opts)
    return PubSubArrowWriter(opts, write_id=uuid.uuid4().hex)


def _task_context() -> TaskContext | None:
    from pyspark import TaskContext

    return TaskContext.get()


def publish_partition(opts: SinkOptions, batches: Iterator[pa.RecordBatch], partition_id: int,
                      id_prefix: str, what: str) -> PublishCommitMessage:
    """Publishes every row of one task and waits until the server has
    acknowledged all of them (bounded by publishTimeoutMs)."""
    from ...errors import DeadlineExceededError, PubSubError

    freeze_long_lived()
    try:
        stats = publish_all(opts, batches, id_prefix)
    except DeadlineExceededError as e:
        raise type(e)(e.code, f"pubsub-go sink, {what}: not every message was acknowledged within "
                              f"publishTimeoutMs={opts.publish_timeout_ms}: {e.message}; "
                              f"{AT_LEAST_ONCE}", e.kind) from e
    except PubSubError as e:
        raise type(e)(e.code, f"pubsub-go sink, {what}: {e.message}", e.kind) from e
    return PublishCommitMessage(
        partition_id=partition_id,
        messages=int(stats.get("published", 0)),
        bytes=int(stats.get("bytes", 0)),
        retries=int(stats.get("retries", 0)),
        id_prefix=id_prefix if opts.id_attribute else None,
    )


def _totals(messages: list[WriterCommitMessage | None]) -> tuple[int, int, int, int]:
    done = [m for m in messages if isinstance(m, PublishCommitMessage)]
    return (len(done), sum(m.messages for m in done), sum(m.bytes for m in done),
            sum(m.retries for m in done))


class PubSubArrowWriter(DataSourceArrowWriter):
    """df.write.format("pubsub-go"): each task leases the worker's publisher."""

    def __init__(self, opts: SinkOptions, write_id: str) -> None:
        self.opts = opts
        # Chosen once on the driver and pickled into every task, so a
        # retried task stamps the same ids.
        self.write_id = write_id

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishCommitMessage:
        ctx = _task_context()
        part = ctx.partitionId() if ctx is not None else 0
        prefix = f"{self.write_id}-0-{part}"
        return publish_partition(self.opts, iterator, part, prefix,
                                 f"partition {part} of write {self.write_id} to {self.opts.destination}")

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        tasks, n, size, retries = _totals(messages)
        log.info("pubsub-go sink: write %s to %s committed: %d messages, %d bytes, %d retries, %d tasks",
                 self.write_id, self.opts.destination, n, size, retries, tasks)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        tasks, n, _, _ = _totals(messages)
        log.warning("pubsub-go sink: write %s to %s aborted; %d messages of %d finished tasks were published "
                    "and stay published: %s", self.write_id, self.opts.destination, n, tasks, AT_LEAST_ONCE)


class _StreamWriterBase:
    """df.writeStream.format("pubsub-go"): each task of each micro-batch leases the worker's publisher."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts
        self.fallback_id = uuid.uuid4().hex
        self.total_messages = 0  # across the batches committed by this driver-side writer

    def _id_prefix(self, ctx: TaskContext | None, part: int) -> str:
        # The query id survives restarts from the checkpoint and a re-run
        # batch keeps its id, so a replay stamps the same ids.
        query = ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx is not None else None
        batch = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
        if query and batch is not None:
            return f"{query}-{batch}-{part}"
        stage = ctx.stageId() if ctx is not None else 0
        log.warning("pubsub-go sink: the task has no streaming query/batch id; ids are unique but a "
                    "replay will not reproduce them")
        return f"{self.fallback_id}-s{stage}-{part}"

    def _write_batches(self, batches: Iterator[pa.RecordBatch]) -> PublishCommitMessage:
        ctx = _task_context()
        part = ctx.partitionId() if ctx is not None else 0
        prefix = self._id_prefix(ctx, part)
        batch = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
        return publish_partition(self.opts, batches, part, prefix,
                                 f"partition {part} of micro-batch {batch} to {self.opts.destination}")

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        tasks, n, size, retries = _totals(messages)
        self.total_messages += n
        log.info("pubsub-go sink: micro-batch %d to %s committed: %d messages, %d bytes, %d retries, "
                 "%d tasks (%d messages since the query started)",
                 batchId, self.opts.destination, n, size, retries, tasks, self.total_messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        tasks, n, _, _ = _totals(messages)
        log.warning("pubsub-go sink: micro-batch %d to %s aborted; %d messages of %d finished tasks were "
                    "published and stay published: %s", batchId, self.opts.destination, n, tasks, AT_LEAST_ONCE)


# The Arrow base class where PySpark has it (4.1+); on 4.0 the stream
# writer below is the only streaming one Spark accepts.
_STREAM_ARROW_BASE: type = STREAM_ARROW_WRITER if STREAM_ARROW_WRITER is not None else DataSourceStreamWriter


class PubSubStreamArrowWriter(_StreamWriterBase, _STREAM_ARROW_BASE):  # type: ignore[misc,valid-type]
    """PySpark 4.1+: Spark hands each task Arrow batches."""

    def __init__(self, opts: SinkOptions) -> None:
        _StreamWriterBase.__init__(self, opts)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishCommitMessage:
        return self._write_batches(iterator)


# Rows per Arrow batch the row-based writer hands to the publisher: the
# Arrow writer's batches are Spark's (spark.sql.execution.arrow.maxRecordsPerBatch,
# 10,000 by default); this keeps the same order of size.
ROWS_PER_ARROW_BATCH = 10_000


class PubSubStreamRowWriter(_StreamWriterBase, DataSourceStreamWriter):
    """PySpark 4.0, which has no DataSourceStreamArrowWriter: Spark hands
    each task Rows; they are gathered into Arrow batches of the sink's
    schema (as Spark would have built them) for the same Go publisher."""

    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        _StreamWriterBase.__init__(self, opts)
        self.schema = schema

    def write(self, iterator: Iterator[Row]) -> PublishCommitMessage:
        return self._write_batches(rows_to_arrow(iterator, self.schema, ROWS_PER_ARROW_BATCH))


def rows_to_arrow(rows: Iterator[Row], schema: StructType, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Rows of the sink's schema (payload, attributes, ordering_key; see
    options.validate_sink_schema) as Arrow batches of batch_rows rows."""
    import pyarrow as pa
    from pyspark.sql.types import MapType

    from ..._spark_version import spark_to_arrow_schema

    arrow_schema = spark_to_arrow_schema(schema)
    maps = [isinstance(f.dataType, MapType) for f in schema.fields]
    n = len(schema.fields)
    while True:
        cols: list[list[Any]] = [[] for _ in range(n)]
        count = 0
        for row in rows:
            for i in range(n):
                v = row[i]
                if maps[i] and v is not None:
                    v = list(v.items())
                cols[i].append(v)
            count += 1
            if count == batch_rows:
                break
        if count == 0:
            return
        yield pa.RecordBatch.from_arrays([pa.array(c, type=arrow_schema.field(i).type) for i, c in enumerate(cols)],
                                         schema=arrow_schema)
        if count < batch_rows:
            return
