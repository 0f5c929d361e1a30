"""The main job: embedded emulator -> publish numbered sample messages ->
read every one back as Arrow batches through the Go data plane (one
subscription) and through spark.readStream.format("pubsub-go") (a second
subscription on the same topic) -> print rows/s of each and whether each
read every message exactly once. Progress lines show each step as it goes.

Spark reads through whichever front end format("pubsub-go") resolves to on
the session, and the demo says which: the Python data source on PySpark 4
after a plain `pip install`, the JVM DataSource V2 source when the session
has the jar (`--jvm`, or `pubsub_go.configure_spark`; on PySpark 3.5 the
only one). Spark's figure is given twice: the total, start-up included, and
the steady state over the full micro-batches after the first, the one to
compare with the data plane's.

Every message carries its number n in its JSON payload, so "exactly once"
is checked, not assumed: each path counts how often it saw each n."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from .client import Emulator, Publisher, Subscriber, admin

PROJECT = "pubsub-go-demo"
TOPIC = f"projects/{PROJECT}/topics/demo"
SUB_ARROW = f"projects/{PROJECT}/subscriptions/demo-arrow"
SUB_SPARK = f"projects/{PROJECT}/subscriptions/demo-spark"

# Enough to show the speed (the bar: a million through Spark, exactly
# once, in under 2 minutes warm on a 2-core machine; 70 s measured there).
DEFAULT_MESSAGES = 1_000_000
# Messages per published batch: large enough that building them in Python
# costs little per message, small enough that progress moves.
PUBLISH_CHUNK = 50_000
# A step that makes no progress this long fails the demo instead of hanging.
STALL_S = 120
PROGRESS_EVERY_S = 1.0
# The backlog is admitted in this many micro-batches (maxRecordsPerTrigger),
# so that full ones follow the first (which carries Python workers and
# planning starting) and give the steady-state rate, whatever --messages is.
# Fewer would mean larger batches, each task's fixed cost spread wider, but
# no steady state at all below a few hundred thousand messages.
SPARK_BATCHES = 4

PYTHON_FRONT_END = "Python data source"
JVM_FRONT_END = "JVM DataSource V2 source"


class Progress:
    """One progress line, rewritten in place on a terminal and printed at
    most once per PROGRESS_EVERY_S otherwise (a log keeps every line)."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.t0 = self._last = time.monotonic()
        self.tty = sys.stdout.isatty()

    def update(self, done: int, force: bool = False, note: str = "") -> None:
        now = time.monotonic()
        if not force and now - self._last < PROGRESS_EVERY_S:
            return
        self._last = now
        rate = done / max(now - self.t0, 1e-9)
        line = f"      {self.label}: {done:,}/{self.total:,} ({rate:,.0f} msg/s){note}"
        print(line, end="\r" if self.tty else "\n", flush=True)

    def done(self, done: int) -> float:
        """Prints the final line; returns the seconds since the start."""
        self.update(done, force=True)
        if self.tty:
            print(flush=True)
        return time.monotonic() - self.t0


def _sample(start: int, n: int) -> pa.RecordBatch:
    """Messages start..start+n-1: payload {"n": i, "sensor": "s<i%7>"},
    attributes source=demo and parity=even|odd (built column-wise: a
    million messages in well under a second)."""
    ids = pa.array(range(start, start + n), pa.int64())
    sensor = pc.subtract(ids, pc.multiply(pc.divide(ids, 7), 7))
    payload = pc.binary_join_element_wise('{"n": ', pc.cast(ids, pa.string()), ', "sensor": "s',
                                          pc.cast(sensor, pa.string()), '"}', "")
    pair = ["source", "parity"] * n
    items = (["demo", "even", "demo", "odd"] if start % 2 == 0 else ["demo", "odd", "demo", "even"]) * (n // 2 + 1)
    attrs = pa.MapArray.from_arrays(pa.array(range(0, 2 * n + 1, 2), pa.int32()), pa.array(pair, pa.string()),
                                    pa.array(items[:2 * n], pa.string()))
    return pa.record_batch({"payload": pc.cast(payload, pa.binary()), "attributes": attrs})


# The n of a demo payload (`{"n": 123, ...`), for pyarrow and for Spark SQL.
NUMBER_PATTERN = r'^\{"n": (\d+),'


def _numbers(payload: pa.Array) -> pa.Array:
    """The n of each demo payload."""
    found = pc.extract_regex(pc.cast(payload, pa.string()), NUMBER_PATTERN.replace("(", "(?P<n>"))
    return pc.cast(found.field("n"), pa.int64())


class Tally:
    """The message numbers one path saw, to count each exactly once."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.chunks: list[pa.Array] = []
        self.rows = 0

    def add(self, numbers: pa.Array) -> None:
        self.chunks.append(numbers)
        self.rows += len(numbers)

    def verdict(self) -> tuple[bool, str]:
        seen = pa.chunked_array(self.chunks, pa.int64())
        counts = pc.value_counts(seen).field("counts") if len(seen) else pa.array([], pa.int64())
        once = pc.sum(pc.equal(counts, 1)).as_py() or 0
        dup, missing = self.rows - len(counts), self.total - len(counts)
        return once == self.total, f"exactly once {once:,}/{self.total:,}, duplicates {dup:,}, missing {missing:,}"


def run(messages: int = DEFAULT_MESSAGES, spark: bool = True, session: Any = None, jvm: bool = False) -> int:
    """Runs the demo; returns the process exit code (0: every path read every
    message exactly once). session: a SparkSession to use (else one is
    started, local[2], and stopped at the end). jvm: the session started
    here gets the JVM front end's jar (pubsub_go.configure_spark)."""
    t0 = time.monotonic()
    plan = _spark_plan(jvm, session) if spark else None
    with Emulator() as emu:
        host = emu.host_port
        print(f"[1/4] embedded emulator on {host}", flush=True)
        admin("create_topic", emulator_host=host, topic=TOPIC)
        for sub in (SUB_ARROW, SUB_SPARK) if spark else (SUB_ARROW,):
            admin("create_subscription", emulator_host=host, topic=TOPIC, subscription=sub,
                  ack_deadline_seconds=60)

        prog = Progress("[2/4] handed to the publisher", messages)
        with Publisher(topic=TOPIC, emulator_host=host) as pub:
            for start in range(0, messages, PUBLISH_CHUNK):
                pub.publish(_sample(start, min(PUBLISH_CHUNK, messages - start)))
                prog.update(start + min(PUBLISH_CHUNK, messages - start))
            res = pub.flush(timeout_ms=STALL_S * 1000)
        took = prog.done(res["published"])
        print(f"[2/4] published {res['published']:,} messages ({res['bytes']:,} bytes) in {took:.2f} s "
              f"({res['published'] / took:,.0f} msg/s)", flush=True)

        arrow = _read_arrow(host, messages)
        results = [("data plane (Subscriber -> Arrow)", arrow)]
        figures: SparkFigures | None = None
        if plan is not None and plan.skip:
            print(f"[3/4] Spark skipped: {plan.skip}", flush=True)
        elif plan is not None:
            tally, seconds, figures = _read_spark(host, messages, session, plan)
            results.append((f"Spark (readStream, {figures.front_end})", (tally, seconds)))
        print("[4/4] summary:", flush=True)
        ok = True
        for name, (tally, seconds) in results:
            good, verdict = tally.verdict()
            ok &= good
            startup = ", start-up included" if figures is not None and name.startswith("Spark") else ""
            print(f"      {name}: {tally.rows:,} rows in {seconds:.2f} s = {tally.rows / seconds:,.0f} rows/s"
                  f"{startup}; {verdict}", flush=True)
        if figures is not None:
            print(f"      Spark steady state: {figures.steady_state()}", flush=True)
        elif plan is not None and plan.skip:
            print(f"      Spark: skipped ({plan.skip})", flush=True)
        print(f"      {'OK' if ok else 'MISMATCH'}: {messages:,} messages in {time.monotonic() - t0:.1f} s",
              flush=True)
        return 0 if ok else 1


class SparkPlan(NamedTuple):
    """How the Spark step reads: through the JVM front end (the session gets
    the jar), or the Python data source; skip says why it cannot run."""

    jvm: bool
    note: str
    skip: str = ""


def _spark_plan(jvm: bool, session: Any) -> SparkPlan:
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


def _read_arrow(host: str, messages: int) -> tuple[Tally, float]:
    """Reads SUB_ARROW with the Go data plane, acking each batch; stops at
    every message or STALL_S without any."""
    tally = Tally(messages)
    prog = Progress("[3/4] read through the data plane", messages)
    schema = None
    with Subscriber(subscription=SUB_ARROW, emulator_host=host) as sub:
        last = time.monotonic()
        while tally.rows < messages and time.monotonic() - last < STALL_S:
            b, acks = sub.next_batch(max_rows=0, wait_ms=200)
            if b.num_rows:
                schema = b.schema
                tally.add(_numbers(b.column("payload")))
                sub.ack(acks)
                last = time.monotonic()
            prog.update(tally.rows)
    took = prog.done(tally.rows)
    if schema is not None:
        print(f"      Arrow schema: {', '.join(f'{f.name} {f.type}' for f in schema)}", flush=True)
    return tally, took


def _read_spark(host: str, messages: int, session: Any, plan: SparkPlan) -> tuple[Tally, float, SparkFigures]:
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
            described = _front_end_of(q)
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


def _front_end_of(query: Any) -> str:
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
