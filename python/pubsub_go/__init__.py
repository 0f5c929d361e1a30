"""pubsub-go: a Google Cloud Pub/Sub connector for Apache Spark.

The data plane (StreamingPull, leases, acks, publishing, Arrow batch
building, WASM decoders) is a Go shared library loaded through cffi;
importing this package does NOT load it (see _native.py: Go must not be
loaded before PySpark forks its workers).

    spark.readStream.format("pubsub-go").option("projectId", ...) ...
    df.writeStream.format("pubsub-go").option("topicId", ...) ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    ClosedError,
    ForkedProcessError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PubSubError,
    UnavailableError,
)

__all__ = [
    "__version__", "ClosedError", "Emulator", "ForkedProcessError", "InternalError", "InvalidArgumentError",
    "NotFoundError", "PubSubError", "Publisher", "Subscriber", "UnavailableError", "decode", "register",
]

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .client import Emulator, Publisher, Subscriber
    from .native_decoder import decode


def __getattr__(name: str) -> Any:
    # Lazy: keeps `import pubsub_go` free of pyarrow/cffi work until needed.
    if name in ("Subscriber", "Publisher", "Emulator", "admin", "version", "version_info"):
        from . import client

        return getattr(client, name)
    if name == "decode":
        from .native_decoder import decode

        return decode
    raise AttributeError(name)


def register(spark: SparkSession) -> None:
    """Registers the `pubsub-go` data source on a session (PySpark also
    auto-registers it through the top-level module pyspark_pubsub_go)."""
    from .spark.provider import PubSubDataSource
    from .spark.read.options import SPARK_MASTER_ENV

    # The source's Python processes cannot see the master; they get it in
    # their environment (taken at registration), to check cluster-only options.
    spark.sparkContext.environment[SPARK_MASTER_ENV] = spark.sparkContext.master
    spark.dataSource.register(PubSubDataSource)
