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


@pytest.fixture(scope="module")
def connect_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def spark(connect_port: int) -> Iterator:
    """One classic session for the suite; its JVM also runs a Spark Connect
    server (the plugin the pyspark wheel ships), so Connect tests add no JVM."""
    from pyspark.sql import SparkSession

    import pubsub_go
    from sparkutil import stop_spark

    stop_spark()  # a session an earlier test module left running has other settings
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    s = (SparkSession.builder.master("local[2]").appName("pubsub-go-compat")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.sql.streaming.stopTimeout", "60s")
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
