"""Where the sink's rows go: one task's publishers, one per topic.

Rows go to `topicId`, or, with a `topic` column, each to the topic it
names; each topic gets its own publisher from the worker's pool, so
batching and ordering are per topic (docs/sink.md, "Routing rows by topic").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from .options import TOPIC_COLUMN, SinkOptions
from .publisher_pool import POOL, LentPublisher

if TYPE_CHECKING:
    import pyarrow as pa


def publish_all(opts: SinkOptions, batches: Iterator[pa.RecordBatch], id_prefix: str) -> dict[str, Any]:
    """Hands every row of one task to its topic's publisher and returns the
    summed publish stats once the server has acknowledged all of them."""
    with ExitStack() as stack:
        router = _Router(opts, stack, id_prefix)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            router.publish(batch)
        # The commit message is built only after this returns: every
        # message of the task is acknowledged. Only then does a lease keep
        # its publisher for the next task; on any error it is closed.
        return router.flush()


class _Router:
    """One task's publishers, one per topic its rows go to, each leased
    from the worker's pool on the topic's first row (empty partitions cost
    no connection). Rows without a topic column go to topicId; with one,
    each Arrow batch is split by topic, keeping the rows' order within each
    topic (so ordering keys keep theirs), and each topic batches its own
    requests. Every publisher a batch needs is opened, and so its topic
    checked, before any row of the batch is handed over: a batch naming an
    unknown topic fails with nothing of it published. Rows are numbered per
    topic for idAttribute (`<prefix>-<n>`, n counting the topic's rows in
    the task), which a retry reproduces as the task-wide numbering would."""

    def __init__(self, opts: SinkOptions, stack: ExitStack, id_prefix: str) -> None:
        self.opts, self.stack, self.id_prefix = opts, stack, id_prefix
        self.pubs: dict[str, LentPublisher] = {}
        self.rows: dict[str, int] = {}  # per topic: rows handed over in this task

    def _lease(self, topic: str) -> LentPublisher:
        if topic not in self.pubs:
            self.pubs[topic] = self.stack.enter_context(
                POOL.lease(self.opts.publisher_config(self.id_prefix, topic), self.opts.publisher_idle_ms / 1000))
            self.rows[topic] = 0
        return self.pubs[topic]

    def _hand_over(self, topic: str, batch: pa.RecordBatch) -> None:
        where = "this task" if len(self.pubs) == 1 else f"this task's rows for {topic}"
        self.pubs[topic].publish(batch, self.rows[topic], where)  # handed to Go while the next batch is read
        self.rows[topic] += batch.num_rows

    def publish(self, batch: pa.RecordBatch) -> None:
        if TOPIC_COLUMN not in batch.schema.names:
            topic = self.opts.route(None)
            self._lease(topic)
            self._hand_over(topic, batch)
            return
        parts = _split_by_topic(self.opts, batch)
        for topic, _ in parts:
            self._lease(topic)
        for topic, part in parts:
            self._hand_over(topic, part)

    def flush(self) -> dict[str, Any]:
        totals: dict[str, int] = {}
        for pub in self.pubs.values():
            for k, v in pub.flush(self.opts.publish_timeout_ms).items():
                totals[k] = totals.get(k, 0) + v
        return totals


def _split_by_topic(opts: SinkOptions, batch: pa.RecordBatch) -> list[tuple[str, pa.RecordBatch]]:
    """The batch's rows grouped by the topic path their topic column
    names (a null takes topicId), in first-appearance order, each group in
    row order and without the topic column. One topic: the batch itself,
    not copied."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = batch.column(TOPIC_COLUMN)
    rest = batch.drop_columns([TOPIC_COLUMN])
    encoded = pc.dictionary_encode(column)
    values = encoded.dictionary.to_pylist()
    paths: list[str] = []
    group_of: list[int] = []  # dictionary index (and, last, null) -> group
    for v in [*values, None]:
        if v is None and encoded.indices.null_count == 0:
            group_of.append(-1)
            continue
        path = opts.route(v)
        if path not in paths:
            paths.append(path)
        group_of.append(paths.index(path))
    if len(paths) == 1:
        return [(paths[0], rest)]
    groups = pc.take(pa.array(group_of, pa.int32()), encoded.indices.fill_null(len(values)))
    return [(path, rest.filter(pc.equal(groups, g))) for g, path in enumerate(paths)]
