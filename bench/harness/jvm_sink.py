"""Section 3b, the JVM sink beside the Python sink and Spark's noop sink
(the ceiling), on the same source (SOURCES: Spark's rate-micro-batch by
default, or section 3's in-memory `bench-arrow` Python source; 1 KB
payloads, 2 partitions), writeStream in local[2], to the load server (which
counts what was published), in alternating rounds, each sink first in turn.

With the jar on a session's classpath, format("pubsub-go") is the JVM
sink, so the JVM sink runs in a Spark session of its own: a child process
(`python -m harness.jvm_sink --serve`, built as section 2b's,
harness/jvm_e2e.py) with `bench-arrow` registered, one query per request
on stdin, one JSON line per answer. The Python sink and noop run in the
caller's session, which has no jar. While one session measures, the other
idles (its CPU is counted apart, as "other").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from .jvm_e2e import JvmSession, Probe, build_jar, child_main, jvm_tree_state, serve_requests
from .log import say
from .plan import Plan
from .procs import Build, LoadServer, create

SIZE = 1024
TOPIC = "projects/bench/topics/jvm-write"
SINKS = ("jvm-sink", "python-sink", "noop")


# The source every sink reads. "jvm": Spark's own rate-micro-batch source
# (200,000 rows a micro-batch, 2 partitions) with a 1 KB payload made in
# Spark SQL (a folded 1016-byte constant and the row's number; building each
# payload byte by byte, as rpad does, cost the JVM more than the sinks did),
# so no Python worker sits in front of the sinks and what differs between
# the runs is the sink; a JVM source (Kafka, files, Delta) is what most jobs
# that publish read from. "python": section 3's in-memory bench-arrow Python
# source, whose worker and socket every sink pays for too.
SOURCES = ("jvm", "python")
SOURCE_NAMES = {"jvm": "Spark's rate-micro-batch source", "python": "the bench-arrow Python source"}


def _source(spark, source: str = "jvm"):
    if source == "python":
        return (spark.readStream.format("bench-arrow").option("schema", "publish").option("numPartitions", "2")
                .option("rowsPerPartition", "100000").option("payloadBytes", str(SIZE)).load())
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", "200000")
            .option("numPartitions", "2").load()
            .selectExpr(f"concat(unhex(repeat('61', {SIZE - 8})), CAST(lpad(CAST(value AS STRING), 8, '0') AS BINARY))"
                        " AS payload"))


def measure_sink(spark, sink: str, host: str | None, scratch: str, warmup: float, window: float,
                 loadserver_pid: int, other_root: int | None, source: str = "jvm") -> dict:
    """One run of the source into sink ("pubsub-go" or "noop"), with CPU by process (harness/jvm_e2e.Probe)."""
    from .sparkrun import measure

    probe = Probe(spark, loadserver_pid, other_root)
    opts = {"topicId": TOPIC, "emulatorHost": host} if sink == "pubsub-go" else None
    try:
        m = measure(_source(spark, source), scratch, warmup, window, sink=sink, sink_options=opts, probe=probe)
    finally:
        mem = probe.stop()
    m.pop("progress", None)
    cores, rps = probe.cores, m["rows_per_sec"]
    per_row = {k: v / rps * 1e6 for k, v in cores.items() if k != "seconds"} if rps else {}
    return {**m, "cores": cores, "cpu_us_per_row": per_row,
            "cpu_us_per_row_total": sum(v for k, v in per_row.items() if k != "other"), **mem}


class SinkSession(JvmSession):
    """The child process holding the JVM sink's Spark session (JvmSession's protocol)."""

    MODULE = "harness.jvm_sink"
    LOG = "jvm-sink-session.log"


def serve(a: argparse.Namespace) -> int:
    """The child: one SparkSession with the jar and bench-arrow, one sink run per request."""

    def setup(spark) -> None:
        from arrow_source import ArrowMemorySource

        spark.dataSource.register(ArrowMemorySource)

    def one(spark, req: dict) -> dict:
        return measure_sink(spark, "pubsub-go", req["host"], a.scratch, req["warmup"], req["window"],
                            req["loadserver_pid"], os.getppid(), req.get("source", "jvm"))

    return serve_requests(a, one, setup)


def run(spark, build: Build, plan: Plan, scratch: str, jar: str | None = None, rounds: int | None = None,
        warmup: float | None = None, window: float | None = None, source: str = "jvm") -> dict:
    """spark: the caller's session (no jar, bench-arrow and the Python sink
    registered). jar: the JVM sink's jar; None builds it from this tree.
    source: one of SOURCES, what every sink reads."""
    rounds = rounds or plan.reps
    warmup = plan.spark_warmup if warmup is None else warmup
    window = plan.spark_window if window is None else window
    if jar is None:
        say("3b JVM sink: building the jar from jvm/ (jvm/build.sh)")
        jar_path, jar_from = build_jar(build), f"built from the tree ({jvm_tree_state()}) by jvm/build.sh"
    else:
        jar_path, jar_from = Path(jar), jar
    res: dict = {"jar": jar_from, "source": source, "rounds": rounds, "warmup": warmup, "window": window, "rows": [],
                 "load": [os.getloadavg()]}
    server = LoadServer(build, SIZE)
    jvm = None
    try:
        create(build, server, TOPIC, [])
        say("3b JVM sink: starting the JVM sink's Spark session (a process of its own, the jar on it)")
        jvm = SinkSession(build, jar_path, scratch)
        res["spark_version_jvm_session"] = jvm.spark_version
        # Warm each session's JIT and Python workers once (not counted): a
        # fresh JVM compiles for its first ~20 s (section 2b).
        say("3b JVM sink: warm-up of both sessions (not counted)")
        jvm.run(host=server.host, warmup=2, window=max(2 * window, 15), loadserver_pid=server.proc.pid,
                source=source)
        for sink in ("pubsub-go", "noop"):
            measure_sink(spark, sink, server.host, scratch, 2, window, server.proc.pid, jvm.pid, source)
        for r in range(rounds):
            order = SINKS[r % 3:] + SINKS[:r % 3]  # each sink first in turn
            for sink in order:
                before = server.stats()["published"]
                try:
                    if sink == "jvm-sink":
                        m = jvm.run(host=server.host, warmup=warmup, window=window, loadserver_pid=server.proc.pid,
                                    source=source)
                    else:
                        m = measure_sink(spark, "pubsub-go" if sink == "python-sink" else "noop", server.host,
                                         scratch, warmup, window, server.proc.pid, jvm.pid, source)
                except Exception as e:
                    say(f"3b JVM sink round {r + 1} {sink} FAILED: {e}")
                    res["rows"].append({"sink": sink, "round": r, "error": str(e)[:500]})
                    continue
                m["server_published"] = server.stats()["published"] - before
                if sink != "noop" and m["server_published"] < m["rows"]:
                    # The rows counted must have reached the server: a sink that
                    # dropped rows would look fast.
                    m["error"] = f"the server counted {m['server_published']} publishes for {m['rows']} rows"
                res["rows"].append({"sink": sink, "round": r, **m})
                say(f"3b JVM sink round {r + 1}/{rounds} {sink}: {m['rows_per_sec']:,.0f} rows/s, "
                    f"{m['cpu_us_per_row_total']:.2f} µs CPU/row, load {os.getloadavg()[0]:.1f}")
            res["load"].append(os.getloadavg())
    finally:
        if jvm is not None:
            jvm.stop()
        server.stop()
    res.update(summarize(res["rows"]))
    return res


RATIOS = (("jvm_vs_python", "jvm-sink", "python-sink", "JVM sink / Python sink"),
          ("jvm_vs_noop", "jvm-sink", "noop", "JVM sink / noop"),
          ("python_vs_noop", "python-sink", "noop", "Python sink / noop"))


def summarize(rows: list[dict]) -> dict:
    """Per-round ratios (a round's sinks ran back to back, so load shifts
    between rounds cancel) and their median and range."""
    by = {(r["sink"], r["round"]): r for r in rows if "error" not in r}
    ratios = []
    for r in sorted({k[1] for k in by}):
        x: dict = {"round": r}
        for key, a, b, _ in RATIOS:
            ra, rb = by.get((a, r)), by.get((b, r))
            x[key] = ra["rows_per_sec"] / rb["rows_per_sec"] if ra and rb else None
        ratios.append(x)
    spread = {}
    for key, _, _, _ in RATIOS:
        xs = [x[key] for x in ratios if x[key] is not None]
        if xs:
            spread[key] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}
    return {"ratios": ratios, "spread": spread}


def report(res: dict) -> list[str]:
    """The printout of bench/tools/jvm_sink.py, also bench/results.md's section."""
    ok = [r for r in res["rows"] if "error" not in r]
    loads = "; ".join(" ".join(f"{v:.1f}" for v in ld) for ld in res.get("load", []))
    out = [f"jar: {res['jar']}; {res['rounds']} rounds, warm-up {res['warmup']} s, window {res['window']} s; "
           f"load average (1, 5, 15 min) at the start and after each round: {loads}", "",
           f"rows/s per round (1 KB payloads, {SOURCE_NAMES[res.get('source', 'python')]}, local[2]):"]
    for r in range(res["rounds"]):
        got = {x["sink"]: x for x in ok if x["round"] == r}
        out.append(f"  round {r + 1}: " + ", ".join(f"{s} {got[s]['rows_per_sec']:,.0f}" if s in got else f"{s} failed"
                                                  for s in SINKS))
    for key, _, _, name in RATIOS:
        s = res.get("spread", {}).get(key)
        if s:
            per = ", ".join(f"{x[key]:.2f}x" for x in res["ratios"] if x[key] is not None)
            out.append(f"{name}: median {s['median']:.2f}x [{s['min']:.2f}–{s['max']:.2f}] over {s['n']} rounds "
                       f"({per})")
    out += ["", "CPU µs per row by process (median over rounds; 'other' is the idle session):"]
    roles = ("jvm", "workers", "driver", "loadserver", "other")
    for s in SINKS:
        rs = [x for x in ok if x["sink"] == s and x.get("cpu_us_per_row")]
        if rs:
            med = {k: statistics.median([x["cpu_us_per_row"].get(k, 0.0) for x in rs]) for k in roles}
            tot = statistics.median([x["cpu_us_per_row_total"] for x in rs])
            out.append(f"  {s:12s} total {tot:.2f}: " + ", ".join(f"{k} {v:.2f}" for k, v in med.items()))
    for r in res["rows"]:
        if "error" in r:
            out.append(f"FAILED round {r['round'] + 1} {r['sink']}: {r['error'][:300]}")
    return out


def main() -> int:
    return child_main(serve, "bench/harness/jvm_sink.py", "bench/tools/jvm_sink.py")


if __name__ == "__main__":
    sys.exit(main())
