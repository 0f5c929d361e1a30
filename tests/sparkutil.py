"""Spark sessions and a standalone cluster for tests, all on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from emulators import free_port, wait_for_port

# Maven Central has no spark-avro 4.3.0 yet; 4.1.1's from_avro/to_avro run on Spark 4.3.
SPARK_AVRO = os.environ.get("PUBSUB_GO_SPARK_AVRO", "org.apache.spark:spark-avro_2.13:4.1.1")


def spark_session(master: str = "local[2]", app: str = "pubsub-go-tests", **conf: str):
    """A session on loopback. spark-avro is always on the classpath: packages
    only apply when the JVM starts, whichever test starts it first."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.sql.streaming.stopTimeout", "60s")
         .config("spark.jars.packages", SPARK_AVRO))
    for k, v in conf.items():
        b = b.config(k.replace("__", "."), v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def classpath_conf(*specs: str) -> dict[str, str]:
    """spark_session arguments that put each of specs (comma-separated lists
    allowed) on the classpath beside spark-avro: Maven coordinates
    (group:artifact:version) through spark.jars.packages, local jar paths (a
    locally built stand-in such as bench/tools/build_spark_protobuf.sh's)
    through spark.jars."""
    items = [s.strip() for spec in specs for s in spec.split(",") if s.strip()]
    jars = [s for s in items if s.endswith(".jar")]
    conf = {"spark__jars__packages": ",".join([SPARK_AVRO, *(s for s in items if s not in jars)])}
    if jars:
        conf["spark__jars"] = ",".join(jars)
    return conf


def stop_spark() -> None:
    """Stops any SparkContext of this process, so the next session gets the
    context settings it asks for (getOrCreate would reuse the old one)."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is not None:
        sc.stop()


def registered_session(**kwargs: str) -> Iterator:
    """A module's own session (fresh context settings: spark_session's
    arguments) with pubsub-go registered; stopped when the module is done."""
    import pubsub_go

    stop_spark()
    session = spark_session(**kwargs)
    pubsub_go.register(session)
    try:
        yield session
    finally:
        session.stop()


def run_until(query, predicate, timeout: float = 120.0) -> None:
    """Drives a streaming query until predicate() holds (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query.exception():
            raise query.exception()
        query.processAllAvailable()
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"condition not reached within {timeout}s; last progress: {query.lastProgress}")


def prefetching_stream(spark, server, log_dir: str, project: str, n: int, per_batch: int):
    """A readStream from a new topic and subscription of project on the load
    server, one partition reading per_batch rows a micro-batch, whose pooled
    subscriber may prefetch all n messages and is kept two minutes unused."""
    import pubsub_go
    from pubsub_go.client import admin

    topic, sub = f"projects/{project}/topics/t", f"projects/{project}/subscriptions/s"
    admin("create_topic", emulator_host=server.host_port, topic=topic)
    admin("create_subscription", emulator_host=server.host_port, topic=topic, subscription=sub)
    pubsub_go.register(spark)
    return (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
            .option("emulatorHost", server.host_port).option("batchLogLocation", log_dir)
            .option("numPartitions", "1").option("maxRecordsPerTrigger", str(per_batch))
            .option("maxOutstandingMessages", str(n))  # room to prefetch everything
            .option("ackDeadlineSeconds", "60").option("subscriberIdleMs", "120000").load())


def wait_for_full_prefetch(query, server, n: int, ready=lambda stats: True,
                           timeout: float = 180.0) -> tuple[int, dict]:
    """Waits for a moment between micro-batches when the load server has
    delivered all n messages and the query has read some but not all: what
    it has not read is its pooled subscriber's prefetch. (A batch's rows
    are acked when Spark commits it, at the start of the next batch; until
    then the driver holds their leases.) Two looks at the trigger bracket
    the check, so no task takes rows meanwhile; ready(stats) may add to it.
    Returns the rows the query read and the server's stats then."""
    deadline = time.monotonic() + timeout
    while True:
        assert time.monotonic() < deadline, f"no idle moment with a full prefetch; {server.stats()}"
        if query.exception():
            raise query.exception()
        before = query.status["isTriggerActive"]
        done_rows = sum(p["numInputRows"] for p in query.recentProgress)
        stats = server.stats()
        ok = 0 < done_rows < n and stats["delivered"] == n and ready(stats)
        if ok and not before and not query.status["isTriggerActive"]:
            return done_rows, stats
        time.sleep(0.05)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class StandaloneCluster:
    """A Spark standalone master and workers started from the installed
    pyspark, on loopback; each stopped by its own process group."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        home = spark_home()
        self._dir = tempfile.mkdtemp(prefix="spark-standalone-")
        env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
                   PYSPARK_PYTHON=sys.executable, SPARK_WORKER_DIR=self._dir, SPARK_LOG_DIR=self._dir)
        cls = str(home / "bin" / "spark-class")
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self._logs = []
        self._start(env, [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                          "--port", str(self.port), "--webui-port", str(free_port())], "master")
        if not wait_for_port("127.0.0.1", self.port, 90):
            self.stop()
            raise RuntimeError("Spark master did not start")
        for i in range(workers):
            self._start(env, [cls, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                              "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                              "--work-dir", f"{self._dir}/w{i}", self.url], f"worker{i}")

    def _start(self, env: dict, cmd: list[str], name: str) -> None:
        log = open(Path(self._dir) / f"{name}.log", "wb")  # noqa: SIM115 - closed in stop()
        self._logs.append(log)
        self.procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True))

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        deadline = time.monotonic() + 30
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        for log in self._logs:
            log.close()
