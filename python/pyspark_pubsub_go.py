"""PySpark auto-registration: PySpark imports every top-level module named
pyspark_* and registers its DefaultSource, so `format("pubsub-go")` works
right after `pip install`. Importing this must not load the Go library."""

from pubsub_go.spark.provider import PubSubDataSource as DefaultSource

__all__ = ["DefaultSource"]
