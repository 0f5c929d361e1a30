"""Which PySpark is installed, checked when the Python data source is registered, without
importing PySpark (importing pubsub_go stays cheap, and never loads the Go
library). The supported range is stated here once; what each supported
version offers is decided by feature detection (spark/compat.py).

PySpark is never a hard dependency: `pip install pubsub-go` leaves the
platform's Spark alone (pyproject.toml). The data plane alone (Subscriber,
Publisher) needs no PySpark at all.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

# The supported PySpark versions, as pip writes them (pyproject.toml's
# `spark` extra says the same; tests/compat/test_packaging checks it).
SUPPORTED_RANGE = ">=4.0,<5"
LOWEST_SUPPORTED = (4, 0)


class UnsupportedSparkError(ImportError):
    """The installed PySpark has no Python Data Source API this connector can use."""


def installed_pyspark_version() -> str | None:
    """The version of the PySpark that `import pyspark` would load (read from
    its version.py, so also a PySpark on sys.path without pip metadata, as on
    Databricks), or None when there is none."""
    try:
        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        f = Path(loc) / "version.py"
        try:
            m = re.search(r"""__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""", f.read_text())
        except OSError:
            continue
        if m:
            return m.group(1)
    return None


def _major_minor(version: str) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def unsupported_message(version: str) -> str:
    return (f"pubsub-go's Python data source needs PySpark {SUPPORTED_RANGE} (Spark 4.0 or later: the Python "
            f"Data Source streaming API), but PySpark {version} is installed. On Spark 3.5, read through the "
            f"JVM front end instead: pubsub_go.configure_spark(SparkSession.builder) puts its jar on the "
            f"session (docs/jvm.md). Or use a Spark 4 runtime (e.g. Dataproc image "
            f"3.0, Dataproc Serverless runtime 3.0, EMR 8.0, Databricks 17.3 LTS or later; docs/platforms.md), "
            f"or install a supported PySpark in this environment: pip install 'pyspark{SUPPORTED_RANGE}'. "
            f"The data plane alone (pubsub_go.Subscriber/Publisher) works without PySpark: uninstall it if "
            f"you do not use Spark here.")


def check_installed_pyspark() -> None:
    """Raises UnsupportedSparkError if the installed PySpark is older than
    the lowest supported version; no PySpark at all is fine."""
    version = installed_pyspark_version()
    if version is None:
        return
    mm = _major_minor(version)
    if mm is not None and mm < LOWEST_SUPPORTED:
        raise UnsupportedSparkError(unsupported_message(version))


def spark_to_arrow_schema(schema: Any) -> Any:
    """pyspark's to_arrow_schema with timestamps in UTC, as this PySpark
    spells it: `timezone="UTC"` (4.3+) or `timestamp_utc=True` (4.0 to 4.2),
    told apart by the function's own parameters."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema, timestamp_utc=True)
