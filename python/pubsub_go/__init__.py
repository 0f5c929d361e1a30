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

from ._spark_version import check_installed_pyspark
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

# Importing works next to any PySpark (the data plane, decode and the JVM
# jar need none); the Python data source needs 4.0, checked where it is
# registered (register(), and PySpark 4's auto-registration).

__all__ = [
    "__version__", "ClosedError", "Emulator", "ForkedProcessError", "InternalError", "InvalidArgumentError",
    "NotFoundError", "PubSubError", "Publisher", "Subscriber", "UnavailableError", "configure_spark", "decode",
    "drain", "jar_path", "register",
]

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .client import Emulator, Publisher, Subscriber
    from .decode_api import decode

from .jvm import configure_spark, jar_path  # noqa: E402 - plain Python: no PySpark, no library


def __getattr__(name: str) -> Any:
    # Lazy: keeps `import pubsub_go` free of pyarrow/cffi work until needed.
    if name in ("Subscriber", "Publisher", "Emulator", "admin", "version", "version_info"):
        from . import client

        return getattr(client, name)
    if name == "decode":
        from .decode_api import decode

        return decode
    raise AttributeError(name)


def register(spark: SparkSession) -> None:
    """Registers the `pubsub-go` data source on a session (PySpark also
    auto-registers it through the top-level module pyspark_pubsub_go), a
    classic session or a Spark Connect one (then the package must be
    installed where the Connect server and its executors run)."""
    check_installed_pyspark()
    from .spark.compat import is_connect_session
    from .spark.provider import PubSubDataSource
    from .spark.read.options.source import SPARK_MASTER_ENV

    if not is_connect_session(spark):
        # The source's Python processes cannot see the master; they get it in
        # their environment (taken at registration), to check cluster-only
        # options. A Connect client has no SparkContext (nor the server's
        # master): there the check is left to the options' own defaults.
        spark.sparkContext.environment[SPARK_MASTER_ENV] = spark.sparkContext.master
    _redact_private_key(spark)
    try:
        spark.dataSource.register(PubSubDataSource)
    except Exception as e:
        # PySpark 4.0/4.1 refuse to register a name that auto-registration
        # (pyspark_pubsub_go) already registered: that is this same source.
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise


# Option keys Spark must redact in the query plan besides its own
# (spark.redaction.regex covers "credential", not Databricks' privateKey).
REDACTED_OPTIONS = "privatekey"


def _redact_private_key(spark: SparkSession) -> None:
    """Adds privateKey (docs/source.md, "Option names from other connectors")
    to the session's spark.sql.redaction.options.regex, keeping what is there."""
    key = "spark.sql.redaction.options.regex"
    try:
        current = spark.conf.get(key) or ""
        if REDACTED_OPTIONS not in current.lower():
            spark.conf.set(key, f"{current}|(?i){REDACTED_OPTIONS}" if current else f"(?i){REDACTED_OPTIONS}")
    except Exception as e:  # a server that refuses the setting: the docs say how to set it
        import logging

        logging.getLogger("pubsub_go").warning("could not add privateKey to %s: %s", key, e)


def drain(query: Any, timeout_s: float | None = None) -> None:
    """Runs a streaming query started on a source with option
    drainBacklog=true until it has read everything published before it
    started, then stops it: the "read the backlog, then stop" job on every
    supported Spark (docs/source.md, "Read the backlog, then stop").
    Raises the query's error if it failed; TimeoutError (after stopping it)
    if timeout_s passed first."""
    from .spark.compat import drain_query

    drain_query(query, timeout_s)
