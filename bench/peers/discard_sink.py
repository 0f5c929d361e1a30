"""`bench-discard`: the fair ceiling for a Python streaming sink. Its
writer is a `DataSourceStreamArrowWriter`, as pubsub-go's sink is, whose
`write` takes every Arrow batch Spark hands it and drops it, so the figure
is what Spark's Python writer path itself can carry (the JVM's Arrow
conversion, the transfer to the Python worker, the import into pyarrow).
`noop` leaves all of that out."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType


@dataclass
class Discarded(WriterCommitMessage):
    rows: int


class DiscardWriter(DataSourceStreamArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> Discarded:
        # Counting rows touches only the batch header, as dropping should.
        return Discarded(sum(b.num_rows for b in iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's name
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        pass


class DiscardSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench-discard"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DiscardWriter:  # noqa: N802 - Spark's name
        return DiscardWriter()
