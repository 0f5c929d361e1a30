"""The main job's Spark step (demo.py runs it): which front end reads
(SparkPlan, decided before anything is published), the streaming read of
the backlog counted in foreachBatch, and its figures (SparkFigures: the
total and the steady state)."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import pyarrow as pa

from .demo import NUMBER_PATTERN, PROGRESS_EVERY_S, STALL_S, SUB_SPARK, Progress, Tally

# The backlog is admitted in this many micro-batches (maxRecordsPerTrigger),
# so that full ones follow the first (which carries Python workers and
# planning starting) and give the steady-state rate, whatever --messages is.
# Fewer would mean larger batches, each task's fixed cost spread wider, but
# no steady state at all below a few hundred thousand messages.
SPARK_BATCHES = 4

PYTHON_FRONT_END = "Python data source"
JVM_FRONT_END = "JVM DataSource V2 source"


class SparkPlan(NamedTuple):
    """How the Spark step reads: through the JVM front end (the session gets
    the jar), or the Python data source; skip says why it cannot run."""

    jvm: bool
    note: str
    skip: str = ""


def spark_plan(jvm: bool, session: Any) -> SparkPlan:
    """Decided before anything is published, so a machine that cannot run
    the Spark step says why at once instead of failing after the data plane."""
    from ._spark_version import LOWEST_SUPPORTED, SUPPORTED_RANGE, _major_minor, installed_pyspark_version

    version = installed_pyspark_version()
    if version is None:
        return SparkPlan(False, "", f"PySpark is not installed: pip install 'pyspark{SUPPORTED_RANGE}' to read "
                                    "through the Python data source (or any PySpark from 3.5 with the jar, "
                                    "docs/jvm.md); --no-spark leaves this step out")
    if session is not None:
        return SparkPlan(_resolves_to_jvm(session), "the session given")
    if jvm:
        return SparkPlan(True, "--jvm: the jar put on the session by pubsub_go.configure_spark")
    mm = _major_minor(version)
    if mm is not None and mm < LOWEST_SUPPORTED:
        # The Python data source needs Spark 4: on 3.5 the jar is the way a
        # user reads at all, so the demo takes it (when this install has it).
        from .jvm import jar_path

        try:
            jar_path()
        except FileNotFoundError as e:
            return SparkPlan(False, "", f"PySpark {version} has no Python data source (it needs "
                                        f"PySpark {SUPPORTED_RANGE}) and {e}")
        return SparkPlan(True, f"PySpark {version} has no Python data source (Spark 4 and later): the jar "
                               "put on the session by pubsub_go.configure_spark, as on Spark 3.5 platforms")
    return SparkPlan(False, f"the default after pip install, on PySpark {version}; for the JVM DataSource V2 "
                            "source put the jar on the session: pubsub_go.configure_spark(SparkSession.builder) "
                            "(docs/jvm.md), or --jvm here")


def _resolves_to_jvm(session: Any) -> bool:
    """Whether format("pubsub-go") resolves to the JVM source on this session:
    Spark's own lookup (JVM data sources before Python ones). A Spark Connect
    session has no JVM here: its spark.jars setting says."""
    from .jvm import JAR_NAME

    try:
        jvm, conf = session._jvm, session._jsparkSession.sessionState().conf()  # noqa: SLF001 - no public API
        found = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource("pubsub-go", conf)
        return str(found.getName()).startswith("io.pubsubgo.")
    except Exception:
        try:
            return JAR_NAME in (session.conf.get("spark.jars", "") or "")
        except Exception:
            return False


class SparkFigures(NamedTuple):
    """What the Spark step measured beside its tally: the front end that read
    (from the query's progress), the rows a micro-batch admits
    (maxRecordsPerTrigger), and each micro-batch with rows as (batch id,
    rows, monotonic time its foreachBatch ended)."""

    front_end: str
    per_batch: int
    batches: list[tuple[int, int, float]]

    def steady_state(self) -> str:
        """Rows of the full micro-batches after the first, over the time from
        the first's end to the last of them's end. The first carries Spark's
        start-up; a batch short of maxRecordsPerTrigger (the backlog's end)
        carries its tasks' wait for quietPeriodMs: neither recurs while a
        stream runs."""
        why = ("(the first micro-batch carries start-up, a short last one the end-of-backlog wait: "
               "both left out)")
        if not self.batches:
            return "not measured: no micro-batch had rows"
        full = []
        for b in self.batches[1:]:
            if b[1] < self.per_batch:
                break
            full.append(b)
        if not full:
            return f"not measured: no full micro-batch ({self.per_batch:,} rows) after the first {why}"
        rows, seconds = sum(r for _, r, _ in full), full[-1][2] - self.batches[0][2]
        return (f"{rows:,} rows in {seconds:.2f} s = {rows / max(seconds, 1e-9):,.0f} rows/s over micro-batches "
                f"2-{len(full) + 1} of {len(self.batches)}, {self.per_batch:,} rows each {why}")


def read_spark(host: str, messages: int, session: Any, plan: SparkPlan) -> tuple[Tally, float, SparkFigures]:
    """Reads SUB_SPARK with a streaming query that reads the backlog and
    stops, counting every micro-batch's message numbers in foreachBatch:
    the Python data source with drainBacklog (pubsub_go.drain: on every
    Spark 4), the JVM source with Trigger.AvailableNow (it refuses
    drainBacklog; its AvailableNow reads the whole backlog). The time is from
    the query's start to the last row, without the quiet period that ends
    the query; the steady state is SparkFigures'."""
    from pyspark.sql import functions as F

    import pubsub_go

    own = session is None
    if own:
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        print(f"      starting Spark (local[2]{', with the jar' if plan.jvm else ''})", flush=True)
        builder = (SparkSession.builder.master("local[2]").appName("pubsub-go-demo")
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "2"))
        session = (pubsub_go.configure_spark(builder) if plan.jvm else builder).getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
    try:
        jvm = _resolves_to_jvm(session)
        if not jvm:
            pubsub_go.register(session)
        print(f"      Spark reads through the {JVM_FRONT_END if jvm else PYTHON_FRONT_END} ({plan.note})",
              flush=True)
        tally = Tally(messages)
        batches: list[tuple[int, int, float]] = []
        prog = Progress("[3/4] read through Spark", messages)

        def count(df: Any, batch_id: int) -> None:
            # Only the numbers travel to the driver (8 bytes a row, not the payload).
            got = _to_arrow(df.select(F.regexp_extract(F.col("payload").cast("string"), NUMBER_PATTERN, 1)
                                      .cast("bigint").alias("n")))
            if got.num_rows:
                tally.add(got.column("n").combine_chunks())
                batches.append((batch_id, got.num_rows, time.monotonic()))
            prog.update(tally.rows)

        timeout_s = STALL_S + messages / 10_000
        per_batch = -(-messages // SPARK_BATCHES)
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
            reader = (session.readStream.format("pubsub-go").option("subscriptionId", SUB_SPARK)
                      .option("emulatorHost", host).option("batchLogLocation", f"{tmp}/log")
                      .option("maxRecordsPerTrigger", str(per_batch)))
            if not jvm:
                reader = reader.option("drainBacklog", "true")  # read the backlog, then stop: every Spark 4
            writer = reader.load().writeStream.foreachBatch(count).option("checkpointLocation", f"{tmp}/ckpt")
            if jvm:
                writer = writer.trigger(availableNow=True)
            q = writer.start()
            _wait_with_progress(q, prog, tally, lambda: _until_done(q, jvm, timeout_s))
            described = front_end_of(q)
    finally:
        if own:
            session.stop()
    prog.done(tally.rows)
    last_row = batches[-1][2] if batches else prog.t0
    return tally, last_row - prog.t0, SparkFigures(described or (JVM_FRONT_END if jvm else PYTHON_FRONT_END),
                                                   per_batch, batches)


def _to_arrow(df: Any) -> pa.Table:
    """df.toArrow() (PySpark 4); PySpark 3.5 has only the private collect."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    return pa.Table.from_batches(df._collect_as_arrow(), schema=pa.schema([("n", pa.int64())]))  # noqa: SLF001


def _until_done(query: Any, jvm: bool, timeout_s: float) -> None:
    """Runs the query to its end: pubsub_go.drain for drainBacklog, else its
    AvailableNow trigger's own end (stopped, and TimeoutError, past timeout_s)."""
    import pubsub_go

    if not jvm:
        pubsub_go.drain(query, timeout_s=timeout_s)
        return
    if not query.awaitTermination(timeout_s):
        query.stop()
        raise TimeoutError(f"the Spark query did not end within {timeout_s:.0f} s")


def front_end_of(query: Any) -> str:
    """The front end that read, as the query's progress describes its source:
    the JVM one as pubsub-go[<subscription>], the Python one as Spark's
    PythonMicroBatchStream...; "" if no progress says."""
    for p in reversed(query.recentProgress or []):
        for src in p.get("sources") or []:
            d = str(src.get("description", ""))
            if d.startswith("pubsub-go["):
                return f"{JVM_FRONT_END}: {d}"
            if ".python." in d or "Python" in d:
                return f"{PYTHON_FRONT_END}: {d.rsplit('.', 1)[-1].split('@')[0]}"
    return ""


def _wait_with_progress(query: Any, prog: Progress, tally: Tally, wait: Callable[[], None]) -> None:
    """wait() in a thread while this one prints a progress line with Spark's
    status: rows count only when a micro-batch ends, and the first one
    (Python workers starting) can take many seconds."""
    failed: list[BaseException] = []

    def drive() -> None:
        try:
            wait()
        except BaseException as e:  # re-raised below, in the caller's thread
            failed.append(e)

    t = threading.Thread(target=drive, name="demo-drain", daemon=True)
    t.start()
    while t.is_alive():
        t.join(PROGRESS_EVERY_S)
        status = query.status if t.is_alive() else None
        if status is not None:
            prog.update(tally.rows, note=f"; Spark: {status['message']}")
    if failed:
        raise failed[0]
