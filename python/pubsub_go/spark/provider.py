"""The `pubsub-go` data source, as PySpark finds it: it owns the options
Spark hands over and builds the stream reader (read/) or the writers
(write/). Importing it loads neither side (nor the Go library): PySpark
imports it in every Python process to register the format."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .optparse import OptionError

if TYPE_CHECKING:
    from .read.driver.stream import PubSubStreamReader


def _schema_for_writing(options: dict[str, str]) -> bool:
    """Whether schema() is asked for by a streaming write. Spark asks a
    streaming sink for its schema too (df.writeStream.format(...) infers the
    table's schema) without saying which direction it is building; a read
    always names its subscription (its topicId, if any, only creates it)."""
    keys = {k.lower() for k in options}
    return "topicid" in keys and "subscriptionid" not in keys


class PubSubDataSource(DataSource):
    """`pubsub-go`: spark.readStream / df.writeStream / df.write."""

    @classmethod
    def name(cls) -> str:
        return "pubsub-go"

    def schema(self) -> str | StructType:
        # Called at load() without a .schema(); with one, PySpark skips it
        # and streamReader validates at query start, still before any task.
        from .read.options.schema_plan import RAW_SPARK_SCHEMA, derive_schema
        from .read.options.source import SourceOptions

        if _schema_for_writing(self.options):
            return RAW_SPARK_SCHEMA
        parsed = SourceOptions.parse(self.options)
        if parsed.decode is not None:
            if parsed.decode.schema_from_topic:
                from .read.driver.topic_schema import fetch_topic_schema

                return derive_schema(parsed.decode, fetch_topic_schema(parsed))
            return derive_schema(parsed.decode)
        if parsed.derived is not None:
            return parsed.derived.extend(RAW_SPARK_SCHEMA)
        return RAW_SPARK_SCHEMA

    def streamReader(self, schema: StructType) -> PubSubStreamReader:
        from .read.driver.stream import PubSubStreamReader

        return PubSubStreamReader(dict(self.options), schema)

    def reader(self, schema: StructType) -> Any:
        raise OptionError("pubsub-go is a streaming source: use spark.readStream.format('pubsub-go') "
                          "(with Trigger.AvailableNow for a one-off read of the backlog)")

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        from .write.writer import make_writer

        return make_writer(dict(self.options), schema, overwrite, streaming=True)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from .write.writer import make_writer

        return make_writer(dict(self.options), schema, overwrite, streaming=False)
