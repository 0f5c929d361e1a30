"""The compatibility suite (docs/platforms.md): what users of every
supported PySpark (4.0 to 4.3) rely on, run against Google's official
emulator with one Spark session (which also serves Spark Connect) for the suite's
module and one emulator for the whole run. Runs alone: `pytest -m compat tests/compat`
(scripts/compat.sh runs it on the latest patch of each older PySpark)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from emulators import free_port

# On the full suite's PySpark (4.2+: what these check is tested there by the
# full suite's own tests, named here) the compatibility suite deselects them
# (not a skip: nothing is left untested), which keeps CI within its time;
# scripts/compat.sh sets PUBSUB_GO_COMPAT=1 and runs everything, and so does
# any run on PySpark 4.0/4.1.
COVERED_BY_FULL_SUITE = {
    "test_driver_killed_between_micro_batches_then_restarted_is_exactly_once":
        "tests/test_source.py, test_hard_stop_of_the_whole_driver_is_exactly_once",
    "test_streaming_read_stopped_and_restarted_is_exactly_once":
        "tests/test_restart_in_one_app.py, and the hard stop in tests/test_source.py",
    "test_streaming_and_batch_writes": "tests/test_sink.py, streaming and batch writes",
    "test_schema_mode_json": "tests/test_schema_mode.py, test_json_columns_equal_spark_from_json",
    "test_the_stricter_of_two_trigger_limits_bounds_every_micro_batch":
        "tests/test_admission.py, test_the_stricter_of_two_trigger_limits_wins",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PUBSUB_GO_COMPAT") == "1":
        return
    try:
        from pubsub_go.spark.compat import ADMISSION_CONTROL
    except ImportError:
        return
    if not ADMISSION_CONTROL:
        return
    keep, covered = [], []
    for item in items:
        in_compat = "tests/compat/" in str(item.path).replace(os.sep, "/")
        if in_compat and getattr(item, "originalname", item.name) in COVERED_BY_FULL_SUITE:
            covered.append(item)
        else:
            keep.append(item)
    if covered:
        config.hook.pytest_deselected(items=covered)
        items[:] = keep


@pytest.fixture(scope="module")
def connect_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def spark(connect_port: int) -> Iterator:
    """One classic session for the suite; its JVM also runs a Spark Connect
    server (the plugin the pyspark wheel ships), so Connect tests add no JVM."""
    from pyspark.sql import SparkSession

    import pubsub_go
    from sparkutil import SPARK_AVRO, stop_spark

    stop_spark()  # a session an earlier test module left running has other settings
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    s = (SparkSession.builder.master("local[2]").appName("pubsub-go-compat")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.sql.streaming.stopTimeout", "60s")
         # As sparkutil.spark_session: packages only apply when the JVM
         # starts, and in the full suite this module starts it for the
         # modules after it (from_avro in tests/test_decode.py).
         .config("spark.jars.packages", SPARK_AVRO)
         .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
         .config("spark.connect.grpc.binding.address", "127.0.0.1")
         .config("spark.connect.grpc.binding.port", str(connect_port))
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    pubsub_go.register(s)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def connect(spark, connect_port: int) -> Iterator:
    """A Spark Connect client session on the suite's server. (Made with the
    Connect session class itself: pyspark's SparkSession.builder.remote
    refuses while a classic session runs in the same process.)"""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    c = ConnectSession.builder.remote(f"sc://127.0.0.1:{connect_port}").getOrCreate()
    try:
        yield c
    finally:
        c.stop()
