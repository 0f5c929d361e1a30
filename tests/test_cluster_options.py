"""On a cluster the batch log must be shared: a read without
batchLogLocation fails at analysis when the master is not local[...], and
the local default refuses to work on a host other than the driver's."""

from __future__ import annotations

import socket

import pytest

import pubsub_go
from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.options.source import SPARK_MASTER_ENV, SourceOptions
from sparkutil import StandaloneCluster, spark_session, stop_spark

SUB = "projects/p/subscriptions/s"


@pytest.mark.spark
def test_read_without_batch_log_location_fails_at_analysis_on_a_cluster(emulator, tmp_path):
    stop_spark()
    cluster = StandaloneCluster(workers=1, cores=1)
    try:
        s = spark_session(master=cluster.url, app="cluster-options", spark__cores__max="1")
        try:
            pubsub_go.register(s)
            reader = s.readStream.format("pubsub-go").option("subscriptionId", SUB).option(
                "emulatorHost", emulator.host_port)
            with pytest.raises(Exception) as e:
                reader.load()  # analysis: no query, no task
            msg = str(e.value)
            assert "batchLogLocation is required" in msg and cluster.url in msg and "gs://" in msg, msg
            df = reader.option("batchLogLocation", str(tmp_path / "log")).load()
            assert "payload" in df.columns
        finally:
            s.stop()
    finally:
        cluster.stop()


def test_local_master_keeps_the_default(monkeypatch):
    monkeypatch.setenv(SPARK_MASTER_ENV, "local[4]")
    o = SourceOptions.parse({"subscriptionId": SUB})
    assert o.batch_log_location.endswith("p.s")
    monkeypatch.setenv(SPARK_MASTER_ENV, "yarn")
    with pytest.raises(OptionError, match="batchLogLocation is required here .the Spark master is yarn"):
        SourceOptions.parse({"subscriptionId": SUB})
    assert SourceOptions.parse({"subscriptionId": SUB, "batchLogLocation": "gs://b/q"}).batch_log_location == "gs://b/q"


def test_default_batch_log_refuses_another_host(monkeypatch):
    monkeypatch.delenv(SPARK_MASTER_ENV, raising=False)
    o = SourceOptions.parse({"subscriptionId": SUB})  # e.g. auto-registered, master unknown
    assert o.batch_log_location  # the driver's host
    monkeypatch.setattr(socket, "gethostname", lambda: "some-executor")
    with pytest.raises(OptionError, match="executors run on other hosts than the driver"):
        o.batch_log_location  # noqa: B018 - the property is the check
    given = SourceOptions.parse({"subscriptionId": SUB, "batchLogLocation": "hdfs:///q/log"})
    assert given.batch_log_location == "hdfs:///q/log"
