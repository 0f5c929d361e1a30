"""What the installed PySpark offers, decided by feature detection (never
by version strings), for one wheel on PySpark 4.0 to 4.3:

- `pyspark.sql.streaming.datasource` (4.2+): admission control (ReadLimit,
  `latestOffset(start, limit)`), `SupportsTriggerAvailableNow` and
  `reportLatestOffset`. Without it (4.0, 4.1) Spark calls `latestOffset()`
  with no arguments and never tells the source its trigger: the source
  tracks its own start, enforces maxRecordsPerTrigger/maxBytesPerTrigger
  itself, and reads "the backlog, then stop" with option drainBacklog
  (read/driver/stream.py, docs/source.md).
- `DataSourceStreamArrowWriter` (4.1+): the streaming sink gets Arrow
  batches. Without it (4.0) a row-based stream writer gathers rows into
  Arrow batches for the same Go publisher (write/writer.py).

Importing this imports PySpark (not the Go library)."""

from __future__ import annotations

import threading
from typing import Any

from pyspark.sql import datasource as _ds

try:
    from pyspark.sql.streaming.datasource import (  # PySpark 4.2+
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    ADMISSION_CONTROL = True
except ImportError:  # PySpark 4.0, 4.1
    ADMISSION_CONTROL = False
    ReadAllAvailable = ReadLimit = ReadMaxBytes = ReadMaxRows = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in: this PySpark cannot tell a Python source its trigger."""


# PySpark 4.1+: streaming writers receive Arrow batches.
STREAM_ARROW_WRITER: type | None = getattr(_ds, "DataSourceStreamArrowWriter", None)

__all__ = ["ADMISSION_CONTROL", "STREAM_ARROW_WRITER", "ReadAllAvailable", "ReadLimit", "ReadMaxBytes",
           "ReadMaxRows", "SupportsTriggerAvailableNow", "drain_query", "is_connect_session", "spark_features"]


def spark_features() -> dict[str, Any]:
    """What this PySpark offers the connector (`python -m pubsub_go version` prints it)."""
    import pyspark

    return {
        "pyspark": pyspark.__version__,
        "admissionControl": ADMISSION_CONTROL,
        "triggerAvailableNow": ADMISSION_CONTROL,
        "reportLatestOffset": ADMISSION_CONTROL,
        "streamArrowWriter": STREAM_ARROW_WRITER is not None,
    }


def is_connect_session(spark: Any) -> bool:
    """A Spark Connect client session (it has no SparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def drain_query(query: Any, timeout_s: float | None = None) -> None:
    """See pubsub_go.drain: processAllAvailable() returns once the source
    (option drainBacklog) reports no new data and every batch is committed."""
    if timeout_s is None:
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        _raise_failure(query)
        return
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            query.processAllAvailable()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            errors.append(e)

    t = threading.Thread(target=wait, name="pubsub-go-drain", daemon=True)
    t.start()
    t.join(timeout_s)
    timed_out = t.is_alive()
    query.stop()
    if errors:
        raise errors[0]
    _raise_failure(query)
    if timed_out:
        raise TimeoutError(f"the query did not read its backlog within {timeout_s} s; it was stopped "
                           f"(its checkpoint keeps what it committed; run it again to continue). Was the "
                           f"source started with option drainBacklog=true?")


def _raise_failure(query: Any) -> None:
    exc = query.exception()
    if exc is not None:
        raise exc
