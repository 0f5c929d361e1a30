"""The Spark session of the run (local[2], this process is the driver) and
one streaming query measured from its progress: rows/s = the sum of
numInputRows over the micro-batches that started after the warm-up,
divided by the time from the first one's start to the last one's end.
While the query runs, the RSS of Spark's Python processes is sampled."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from datetime import datetime

import psutil

from .procs import Build


def session(build: Build, jar: str | None = None):
    """jar: a session with the JVM source's jar on it (pubsub_go.configure_spark),
    where format("pubsub-go") is the JVM source, for bench/harness/jvm_e2e.py;
    it registers none of the Python sources and logs to spark-jvm.log."""
    os.environ.update(build.env())  # inherited by the JVM and its Python workers
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.pop("PUBSUB_EMULATOR_HOST", None)
    from pyspark.sql import SparkSession

    # The JVM and its Python workers inherit fd 2: send their stack traces
    # (e.g. from queries stopped mid-batch) to a log, not the progress lines.
    name = "spark-jvm.log" if jar else "spark.log"
    log = os.open(os.path.join(build.dir, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = os.dup(2)
    os.dup2(log, 2)
    try:
        spark = _build(SparkSession, jar)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)
    spark.sparkContext.setLogLevel("ERROR")
    if jar:
        return spark
    from arrow_source import ArrowMemorySource
    from discard_sink import DiscardSink
    from plain_source import PlainPubSubSource

    from pubsub_go.spark.provider import PubSubDataSource

    for src in (ArrowMemorySource, DiscardSink, PlainPubSubSource, PubSubDataSource):
        spark.dataSource.register(src)
    return spark


def _build(SparkSession, jar: str | None = None):  # noqa: N803 - the class
    b = SparkSession.builder
    if jar:
        import pubsub_go.jvm

        # The jar given (by default built from this tree, as the library
        # is), put on the builder the way users do it.
        pubsub_go.jvm.jar_path = lambda: jar
        b = pubsub_go.configure_spark(b)
    return (b.master("local[2]").appName("pubsub-go-bench-jvm" if jar else "pubsub-go-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.memory", "2g")
            .config("spark.sql.streaming.stopTimeout", "60s")
            .getOrCreate())


class RssSampler:
    """Peak RSS of the Python processes below this one (Spark's Python
    workers, the streaming source runner), sampled every 0.5 s."""

    def __init__(self) -> None:
        self.peak_one = 0.0  # MB, the largest single Python process
        self.peak_sum = 0.0  # MB, all of them together
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.5):
            total = 0.0
            for p in me.children(recursive=True):
                try:
                    if "python" not in p.name():
                        continue
                    rss = p.memory_info().rss / 2**20
                except psutil.Error:
                    continue
                total += rss
                self.peak_one = max(self.peak_one, rss)
            self.peak_sum = max(self.peak_sum, total)

    def stop(self) -> None:
        self._stop.set()
        self._t.join(timeout=5)


def _ts(p: dict) -> float:
    return datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()


def measure(reader, scratch: str, warmup: float, window: float, sink: str = "noop",
            sink_options: dict[str, str] | None = None, timeout: float = 240, probe=None) -> dict:
    """Runs reader (a streaming DataFrame) into sink and measures it; its
    checkpoint goes below scratch. probe(stage, query), if given, is called
    with "warm" once the warm-up has passed and with "end" when the window
    is complete, before the query stops (bench/harness/jvm_e2e.py takes
    CPU times there)."""
    ckpt = tempfile.mkdtemp(prefix="ckpt-", dir=scratch)
    w = reader.writeStream.format(sink).option("checkpointLocation", ckpt)
    for k, v in (sink_options or {}).items():
        w = w.option(k, v)
    sampler = RssSampler()
    q = w.start()
    t_start = time.time()
    counted: list[dict] = []
    warm = False
    try:
        while time.time() - t_start < timeout:
            time.sleep(0.5)
            if q.exception() is not None:
                raise RuntimeError(f"query failed: {q.exception()}")
            if probe is not None and not warm and time.time() >= t_start + warmup:
                warm = True
                probe("warm", q)
            counted = [p for p in q.recentProgress if _ts(p) >= t_start + warmup and p["numInputRows"] > 0]
            if len(counted) >= 2 and _end(counted[-1]) - _ts(counted[0]) >= window:
                break
        else:
            if len(counted) < 1:
                raise RuntimeError(f"no micro-batch finished within {timeout}s after a {warmup}s warm-up")
        if probe is not None and warm:
            probe("end", q)
    finally:
        try:
            q.stop()
        finally:
            sampler.stop()
            shutil.rmtree(ckpt, ignore_errors=True)
    rows = sum(p["numInputRows"] for p in counted)
    secs = _end(counted[-1]) - _ts(counted[0])
    return {"rows_per_sec": rows / secs, "rows": rows, "seconds": secs, "batches": len(counted),
            "rows_per_batch": rows / len(counted), "peak_python_rss_mb": sampler.peak_one,
            "peak_python_rss_sum_mb": sampler.peak_sum,
            "progress": [{"durationMs": p["durationMs"], "numInputRows": p["numInputRows"]} for p in counted]}


def _end(p: dict) -> float:
    return _ts(p) + p["batchDuration"] / 1000
