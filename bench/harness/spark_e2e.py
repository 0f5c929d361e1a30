"""Section 2, Spark end to end: readStream into the noop sink, local[2].
pubsub-go (tuned and with default options) vs a plain Python Data Source
on google-cloud-pubsub vs the ceiling (an in-memory source yielding
ready-made Arrow batches of the same schema)."""

from __future__ import annotations

import tempfile

from .log import say
from .plan import Plan
from .procs import Build, LoadServer, create
from .sparkrun import measure

# pubsub-go's options for the "tuned" runs: the best hand tuning known,
# tasks of twice the default rows with twice the default worker memory
# budget (peak worker RSS ~450 MB against the defaults' ~325). In
# alternating rounds it ran 1.15, 1.07, 1.01, 1.02, 1.03 and 1.05x the
# defaults; four times the rows with four times the budget ran 0.89-0.96x,
# one partition 0.87-1.15x, and the earlier tuning (larger flow control,
# longer tasks by time) 0.90x in a full run (bench/tools/spark_ab.py).
# The decode benchmark's Spark part (bench/tools/spark_decode_e2e.py) runs with
# these options too; bench/results/decode_results.md of 2026-11-23 predates them.
TUNED = {"maxRecordsPerPartition": "400000", "maxWorkerMemoryBytes": str(512 << 20)}

SOURCES = ("pubsub-go", "pubsub-go-defaults", "plain-python", "ceiling")


def reader(spark, source: str, host: str, sub: str, size: int, batchlog: str,
           extra: dict[str, str] | None = None):
    """extra: more options for the source (bench/tools/spark_cpu.py --option,
    bench/tools/spark_ab.py), e.g. rowsPerPartition for the ceiling."""
    if source.startswith("pubsub-go"):
        r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
             .option("numPartitions", "2").option("batchLogLocation", batchlog))
        opts = {**(TUNED if source == "pubsub-go" else {}), **(extra or {})}
        for k, v in opts.items():
            r = r.option(k, v)
        return r.load()
    if source == "plain-python":
        return (spark.readStream.format("bench-plain-pubsub").option("subscription", sub)
                .option("emulatorHost", host).option("numPartitions", "2")
                .option("maxRowsPerPartition", "100000").option("maxBatchDurationMs", "2000").load())
    r = (spark.readStream.format("bench-arrow").option("numPartitions", "2")
         .option("rowsPerPartition", "100000").option("payloadBytes", str(size)).option("attributes", "2"))
    for k, v in (extra or {}).items():
        r = r.option(k, v)
    return r.load()


def run(spark, build: Build, plan: Plan, scratch: str) -> list[dict]:
    """scratch holds checkpoints and batch logs; the caller removes it
    after Spark stops (a task of a stopped query may still write its
    batch-log entry)."""
    rows: list[dict] = []
    say("2/5 Spark: JVM warm-up (ceiling source, not counted)")
    measure(reader(spark, "ceiling", "", "", 1024, ""), scratch, warmup=2, window=plan.spark_window)
    total = len(plan.spark_sizes) * plan.reps * len(SOURCES)
    for size in plan.spark_sizes:
        server = LoadServer(build, size)
        try:
            subs = {(s, r): f"projects/bench/subscriptions/e2e-{s}-{r}" for s in SOURCES for r in range(plan.reps)}
            create(build, server, "projects/bench/topics/e2e", list(subs.values()))
            for rep in range(plan.reps):
                for source in SOURCES:
                    batchlog = tempfile.mkdtemp(prefix="batchlog-", dir=scratch)
                    try:
                        m = measure(reader(spark, source, server.host, subs[(source, rep)], size, batchlog),
                                    scratch, plan.spark_warmup, plan.spark_window)
                    except Exception as e:  # one failed configuration must not sink the run
                        say(f"2/5 Spark {size} B {source} run {rep + 1} FAILED: {e}")
                        rows.append({"source": source, "payload": size, "rep": rep, "error": str(e)[:500]})
                        continue
                    rows.append({"source": source, "payload": size, "rep": rep, **m})
                    say(f"2/5 Spark [{len(rows)}/{total}] {size} B {source} run {rep + 1}: "
                        f"{m['rows_per_sec']:,.0f} rows/s over {m['batches']} micro-batches "
                        f"({m['rows_per_batch']:,.0f} rows each), peak Python worker RSS "
                        f"{m['peak_python_rss_mb']:.0f} MB")
        finally:
            server.stop()
    return rows
