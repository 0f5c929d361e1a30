"""bench/results.md: the headline (ratios against the targets), one table
per section, the commands and the machine, all from one run's
results.json. Every figure is the median over the repeated runs with
[min–max]. TARGETS below is the only place the targets are stated."""

from __future__ import annotations

import os
from pathlib import Path

from .stats import Spread, fmt, fmt_ratio, ratio

DP_NAMES = {"pubsub-go": "pubsub-go Subscriber -> pyarrow",
            "google-python": "Google Python client (streaming)",
            "google-go": "Google Go client (Receive)"}
E2E_NAMES = {"pubsub-go": "pubsub-go source (tuned options)",
             "pubsub-go-defaults": "pubsub-go source (default options)",
             "plain-python": "plain Python Data Source on google-cloud-pubsub",
             "ceiling": "ceiling: in-memory Arrow source"}
JVM_NAMES = {"jvm": "JVM source (DataSource V2, default options)",
             "pubsub-go-defaults": "Python source (default options)",
             "ceiling": "ceiling: in-memory Arrow source (Python)"}
WRITE_NAMES = {"spark-sink": "pubsub-go Spark sink (writeStream)",
               "spark-fair-ceiling": "fair ceiling (same source -> Python Arrow writer that drops it)",
               "spark-ceiling": "Spark ceiling (same source -> noop)",
               "pubsub-go-publisher": "pubsub-go Publisher, no Spark", "google-python": "Google Python publisher",
               "google-go": "Google Go publisher"}


BENCH = Path(__file__).resolve().parents[1]

# The project's targets, checked in the headline. Issue 12 raised the
# Spark-ceiling target from the PRD's 0.5x to 0.8x with tuned options and
# 0.7x with the defaults (what most users run).
TARGETS = {
    "dataplane_vs_python": (5, "≥ 5x"),
    "dataplane_per_core_vs_go": (1.2, "≥ 1.2x"),
    "spark_vs_plain": (20, "≥ 20x"),
    "spark_tuned_vs_ceiling": (0.8, "≥ 0.8x"),
    "spark_defaults_vs_ceiling": (0.7, "≥ 0.7x"),
    # Issue 52: the JVM source past any Python data source on this box.
    "jvm_vs_ceiling": (1.25, "≥ 1.25x"),
    "handoff_p99_us": (50, "< 50 µs"),
    "write_vs_python": (10, "≥ 10x"),
    "sink_vs_fair_ceiling": (0.7, "≥ 0.7x"),
}


def _check(key: str, r: float | None) -> list[str]:
    """The target column and the verdict column of a headline row."""
    target, text = TARGETS[key]
    return [text, _verdict(r, target, below=text.startswith("<"))]


def _spread(rows: list[dict], key: str, **match) -> Spread | None:
    return Spread.of([r[key] for r in rows if all(r.get(k) == v for k, v in match.items())
                      and "error" not in r and r.get(key) is not None])


def _errors(rows: list[dict], **match) -> list[str]:
    return [r["error"] for r in rows if "error" in r and all(r.get(k) == v for k, v in match.items())]


def _ratio_spread(s: Spread | None) -> str:
    """The median of per-round ratios with their range."""
    if s is None:
        return "n/a"
    return f"{s.median:.2f}x" + ("" if s.n == 1 else f" [{s.lo:.2f}–{s.hi:.2f}]")


def _verdict(r: float | None, target: float, below: bool = False) -> str:
    if r is None:
        return "not measured"
    ok = r < target if below else r >= target
    return "**met**" if ok else "**missed**"


def _size(b: int) -> str:
    return f"{b // 1024} KB" if b >= 1024 else f"{b} B"


class Report:
    def __init__(self, res: dict) -> None:
        self.r = res
        self.lines: list[str] = []

    def add(self, *ls: str) -> None:
        self.lines.extend(ls)

    def table(self, head: list[str], rows: list[list[str]]) -> None:
        self.add("| " + " | ".join(head) + " |", "|" + "---|" * len(head))
        for row in rows:
            self.add("| " + " | ".join(row) + " |")
        self.add("")

    # -- headline -------------------------------------------------------------
    def headline(self) -> None:
        dp, e2e, wr = self.r.get("dataplane", []), self.r.get("spark", []), self.r.get("write", [])
        ho, mem = self.r.get("handoff", {}), self.r.get("memory", {})
        rows: list[list[str]] = []
        pg = _spread(dp, "msgs_per_sec", client="pubsub-go", payload=1024)
        gpy = _spread(dp, "msgs_per_sec", client="google-python", payload=1024)
        r1 = ratio(pg, gpy)
        rows.append(["Data plane 1 KB, msgs/s: pubsub-go / Google Python client", f"{fmt(pg)} / {fmt(gpy)}",
                     fmt_ratio(r1), *_check("dataplane_vs_python", r1)])
        pgc = _spread(dp, "per_core", client="pubsub-go", payload=1024)
        gpc = _spread(dp, "per_core", client="google-python", payload=1024)
        rows.append(["Data plane 1 KB, msgs/s per core: pubsub-go / Google Python client",
                     f"{fmt(pgc)} / {fmt(gpc)}", fmt_ratio(ratio(pgc, gpc)), "(info)", ""])
        ggc = _spread(dp, "per_core", client="google-go", payload=1024)
        r2 = ratio(pgc, ggc)
        rows.append(["Data plane 1 KB, msgs/s per core: pubsub-go / Google Go client", f"{fmt(pgc)} / {fmt(ggc)}",
                     fmt_ratio(r2), *_check("dataplane_per_core_vs_go", r2)])
        ggo = _spread(dp, "msgs_per_sec", client="google-go", payload=1024)
        rows.append(["Data plane 1 KB, msgs/s: pubsub-go / Google Go client", f"{fmt(pg)} / {fmt(ggo)}",
                     fmt_ratio(ratio(pg, ggo)), "(info)", ""])
        s_pg = _spread(e2e, "rows_per_sec", source="pubsub-go", payload=1024)
        s_def = _spread(e2e, "rows_per_sec", source="pubsub-go-defaults", payload=1024)
        s_plain = _spread(e2e, "rows_per_sec", source="plain-python", payload=1024)
        s_ceil = _spread(e2e, "rows_per_sec", source="ceiling", payload=1024)
        r3, r4 = ratio(s_pg, s_plain), ratio(s_pg, s_ceil)
        rows.append(["Spark e2e 1 KB, rows/s: pubsub-go (tuned) / plain Python Data Source",
                     f"{fmt(s_pg)} / {fmt(s_plain)}", fmt_ratio(r3), *_check("spark_vs_plain", r3)])
        rows.append(["Spark e2e 1 KB, rows/s: pubsub-go (tuned) / Spark ceiling", f"{fmt(s_pg)} / {fmt(s_ceil)}",
                     fmt_ratio(r4), *_check("spark_tuned_vs_ceiling", r4)])
        r3d, r4d = ratio(s_def, s_plain), ratio(s_def, s_ceil)
        rows.append(["Spark e2e 1 KB, rows/s: pubsub-go (default options) / plain Python Data Source",
                     f"{fmt(s_def)} / {fmt(s_plain)}", fmt_ratio(r3d), *_check("spark_vs_plain", r3d)])
        rows.append(["Spark e2e 1 KB, rows/s: pubsub-go (default options) / Spark ceiling",
                     f"{fmt(s_def)} / {fmt(s_ceil)}", fmt_ratio(r4d), *_check("spark_defaults_vs_ceiling", r4d)])
        jvm = self.r.get("jvm") or {}
        if jvm.get("rows"):
            jr = _spread(jvm["rows"], "rows_per_sec", source="jvm")
            jc = _spread(jvm["rows"], "rows_per_sec", source="ceiling")
            rr = Spread.of([x["jvm_vs_ceiling"] for x in jvm.get("ratios", [])])
            rows.append(["Spark e2e 1 KB, rows/s: JVM source (default options) / Spark ceiling, "
                         "alternating rounds (section 2b)", f"{fmt(jr)} / {fmt(jc)}", _ratio_spread(rr),
                         *_check("jvm_vs_ceiling", rr.median if rr else None)])
            jp = _spread(jvm["rows"], "rows_per_sec", source="pubsub-go-defaults")
            rp = Spread.of([x["jvm_vs_python"] for x in jvm.get("ratios", [])])
            rows.append(["Spark e2e 1 KB, rows/s: JVM source / Python source (both default options, section 2b)",
                         f"{fmt(jr)} / {fmt(jp)}", _ratio_spread(rp), "(info)", ""])
        p99 = self._handoff_spread(ho, 1024, "1000", "p99_us")
        v = p99.median if p99 else None
        rows.append(["Hand-off, 1000-row batch of 1 KB messages, next_batch p99", fmt(p99, " µs"),
                     "", *_check("handoff_p99_us", v)])
        p50 = self._handoff_spread(ho, 1024, "1000", "p50_us")
        warm = self._handoff_spread(ho, 1024, "1000", "p99_us", "next_batch_warm")
        rows.append(["Hand-off, same, p50 / p99 of calls after the first of a fill (see section 4)",
                     f"{fmt(p50, ' µs')} / {fmt(warm, ' µs')}", "", "(info)", ""])
        w_sink = _spread(wr, "msgs_per_sec", client="spark-sink")
        w_pub = _spread(wr, "msgs_per_sec", client="pubsub-go-publisher")
        w_py = _spread(wr, "msgs_per_sec", client="google-python")
        w_go = _spread(wr, "msgs_per_sec", client="google-go")
        w_ceil = _spread(wr, "msgs_per_sec", client="spark-ceiling")
        w_fair = _spread(wr, "msgs_per_sec", client="spark-fair-ceiling")
        r5 = ratio(w_sink, w_py)
        rows.append(["Write 1 KB, msgs/s: pubsub-go Spark sink / Google Python publisher",
                     f"{fmt(w_sink)} / {fmt(w_py)}", fmt_ratio(r5), *_check("write_vs_python", r5)])
        r6 = ratio(w_pub, w_py)
        rows.append(["Write 1 KB, msgs/s: pubsub-go Publisher (no Spark) / Google Python publisher",
                     f"{fmt(w_pub)} / {fmt(w_py)}", fmt_ratio(r6), *_check("write_vs_python", r6)])
        rows.append(["Write 1 KB, msgs/s: pubsub-go Publisher (no Spark) / Google Go publisher",
                     f"{fmt(w_pub)} / {fmt(w_go)}", fmt_ratio(ratio(w_pub, w_go)), "(info)", ""])
        r7 = ratio(w_sink, w_fair)
        rows.append(["Write 1 KB, msgs/s: pubsub-go Spark sink / fair ceiling (same source -> discarding "
                     "Python Arrow writer)", f"{fmt(w_sink)} / {fmt(w_fair)}", fmt_ratio(r7),
                     *_check("sink_vs_fair_ceiling", r7)])
        rows.append(["Write 1 KB, msgs/s: pubsub-go Spark sink / Spark ceiling (same source -> noop)",
                     f"{fmt(w_sink)} / {fmt(w_ceil)}", fmt_ratio(ratio(w_sink, w_ceil)), "(info)", ""])
        if mem.get("slope_mb_per_min") is not None:
            rows.append([f"Memory: RSS drift of the pull loop over {mem['seconds'] / 60:.0f} min",
                         f"{mem['rss_start_mb']:.0f} -> {mem['rss_end_mb']:.0f} MB", "",
                         "flat", f"{mem['slope_mb_per_min']:+.2f} MB/min"])
        self.add("## Headline", "")
        self.table(["comparison (median [min–max] over runs)", "project / peer", "ratio", "target", "verdict"], rows)

    @staticmethod
    def _handoff_spread(ho: dict, payload: int, rows: str, key: str, part: str = "next_batch") -> Spread | None:
        return Spread.of([p[part][rows][key] for p in ho.get("peer", [])
                          if p["payload"] == payload and rows in p.get(part, {})])

    # -- sections -------------------------------------------------------------
    def dataplane(self, pngs: list[str]) -> None:
        dp = self.r.get("dataplane", [])
        self.add("## 1. Data plane, no Spark", "",
                 "Each consumer runs in its own process against the same load server (synthetic messages "
                 "with 2 attributes, one StreamingPull stream, flow control 10,000 messages / 1 GB for all), "
                 "acks every message, and counts a fixed window after a warm-up. *cores* = the consumer "
                 "process's user+system CPU seconds / wall seconds over the window (getrusage); "
                 "*per core* = msgs/s / cores. Peak RSS is the process's maximum resident set (wait4).", "")
        for size in sorted({r["payload"] for r in dp}):
            rows = []
            for c, name in DP_NAMES.items():
                m = dict(client=c, payload=size)
                rows.append([name, fmt(_spread(dp, "msgs_per_sec", **m)), fmt(_spread(dp, "cores", **m)),
                             fmt(_spread(dp, "per_core", **m)), fmt(_spread(dp, "mb_per_sec", **m)),
                             fmt(_spread(dp, "max_rss_mb", **m), " MB")])
            self.add(f"**{_size(size)} payloads**", "")
            self.table(["client", "msgs/s", "cores", "msgs/s per core", "MB/s", "peak RSS"], rows)
        for p in pngs:
            self.add(f"![{p}]({p})", "")

    def spark(self) -> None:
        e2e = self.r.get("spark", [])
        self.add("## 2. Spark end to end (readStream -> noop sink, local[2])", "",
                 "rows/s = sum of `numInputRows` of the micro-batches that started after the warm-up / time "
                 "from the first one's start to the last one's end (query progress). 2 partitions each. "
                 "pubsub-go tuned: `" + ", ".join(f"{k}={v}" for k, v in self.r.get("spark_tuned", {}).items())
                 + "`; defaults: only subscriptionId, emulatorHost, numPartitions=2, batchLogLocation. The plain "
                 "source (bench/peers/plain_source.py) pulls 1000 messages per synchronous Pull, yields tuples and "
                 "acks after yielding, up to 100,000 rows or 2 s per task. The ceiling "
                 "(bench/peers/arrow_source.py) yields a ready-made 1000-row Arrow batch of the raw schema "
                 "100 times per task. Peak Python RSS: the largest Python process under the Spark JVM "
                 "(executor workers, source runner), sampled every 0.5 s with psutil.", "")
        for size in sorted({r["payload"] for r in e2e}):
            rows = []
            for s, name in E2E_NAMES.items():
                m = dict(source=s, payload=size)
                errs = _errors(e2e, **m)
                rows.append([name, fmt(_spread(e2e, "rows_per_sec", **m)), fmt(_spread(e2e, "rows_per_batch", **m)),
                             fmt(_spread(e2e, "peak_python_rss_mb", **m), " MB"),
                             f"{len(errs)} failed: {errs[0][:200]}" if errs else ""])
            self.add(f"**{_size(size)} payloads**", "")
            self.table(["source", "rows/s", "rows per micro-batch", "peak Python worker RSS", "notes"], rows)

    def jvm(self) -> None:
        jvm = self.r.get("jvm") or {}
        rows_all = jvm.get("rows") or []
        if not rows_all:
            return
        ok = [r for r in rows_all if "error" not in r]
        self.add("## 2b. The JVM source beside the Python source and the ceiling", "",
                 "The JVM DataSource V2 source (docs/jvm.md) with default options (subscriptionId, emulatorHost, "
                 "numPartitions=2, batchLogLocation, as section 2's defaults row), the Python source with the same "
                 "options, and the ceiling, each readStream into noop, local[2], 1 KB from one load server, in "
                 f"{jvm['rounds']} alternating rounds (each source first in turn; warm-up {jvm['warmup']:g} s, "
                 f"window {jvm['window']:g} s, rows/s as in section 2). With the jar on a session, "
                 '`format("pubsub-go")` is the JVM source, so it runs in a Spark session of its own: a child '
                 "process whose SparkSession is built with `pubsub_go.configure_spark` (bench/harness/jvm_e2e.py; "
                 'its end offsets are checked to say `"frontEnd": "jvm"`); the Python sources run in the '
                 "run's session, which has no jar. Both sessions stay up, warmed once; while one measures the "
                 f"other idles. Jar: {jvm.get('jar', '?')}.", "",
                 "*CPU µs per row* = a process's user+system CPU over the window after the warm-up / rows "
                 "(psutil); *Spark JVM* is driver and executor together (local mode). Memory is sampled every "
                 "0.5 s: the Spark JVM's RSS (native memory included: the Go runtime and the Arrow batches in C "
                 "memory for the JVM source), its Java heap committed (MemoryMXBean), RSS − heap committed "
                 "(*outside the heap*: what spark.executor.memoryOverhead must hold), and the sum of the Python "
                 "workers' RSS (shared pages counted in each).", "")
        self.table(["source", "rows/s", "CPU µs/row total", "Spark JVM", "Python workers", "driver process",
                    "load server", "peak JVM RSS", "heap committed", "outside the heap", "Python workers RSS",
                    "notes"],
                   [[n, fmt(_spread(ok, "rows_per_sec", source=s)), fmt(_spread(ok, "cpu_us_per_row_total", source=s)),
                     *[fmt(Spread.of([r["cpu_us_per_row"].get(k) for r in ok
                                      if r["source"] == s and r.get("cpu_us_per_row")]))
                       for k in ("jvm", "workers", "driver", "loadserver")],
                     *[fmt(_spread(ok, k, source=s), " MB") for k in ("peak_jvm_rss_mb", "peak_heap_committed_mb",
                                                                      "peak_non_heap_mb", "peak_workers_rss_mb")],
                     "; ".join(_errors(rows_all, source=s))[:200]]
                    for s, n in JVM_NAMES.items()])
        by = {(r["source"], r["round"]): r["rows_per_sec"] for r in ok}
        self.add("Per round (rows/s):", "")
        self.table(["round", "JVM source", "Python source", "ceiling", "JVM / ceiling", "JVM / Python",
                    "Python / ceiling"],
                   [[str(x["round"] + 1), *[fmt(Spread.of([by.get((s, x["round"]))])).replace(" (1 run)", "")
                                            for s in JVM_NAMES],
                     *[fmt_ratio(x.get(k)) for k in ("jvm_vs_ceiling", "jvm_vs_python", "python_vs_ceiling")]]
                    for x in jvm.get("ratios", [])])
        recv = [r for r in ok if r["source"] == "receive-only" and r.get("cpu_us_per_row")]
        if recv:
            self.add("*Receiving alone, no Spark* (after each round: pubsub_go's Subscriber reading the same load "
                     "server with one stream per task of a source, into pyarrow, acking every batch; "
                     f"bench/peers/pgreceive.py): {fmt(_spread(recv, 'rows_per_sec'))} rows/s at "
                     f"{fmt(_spread(recv, 'cpu_us_per_row_total'))} µs of CPU per row (the receiver "
                     f"{fmt(Spread.of([r['cpu_us_per_row']['receiver'] for r in recv]))}, the load server "
                     f"{fmt(Spread.of([r['cpu_us_per_row']['loadserver'] for r in recv]))}): what any source on "
                     "this data plane pays per row before Spark sees it, against the ceiling's whole pipeline "
                     f"at {fmt(_spread(ok, 'cpu_us_per_row_total', source='ceiling'))}.", "")
        ov = jvm.get("overhead")
        if ov:
            py = ov.get("python_peak_outside_heap_mb")
            self.add(f"**spark.executor.memoryOverhead for the JVM source: {ov['advice_mib']} MiB.** The Spark JVM "
                     f"reading through the JVM source peaked at {ov['jvm_peak_rss_mb']:.0f} MB RSS, of which "
                     f"{ov['jvm_peak_non_heap_mb']:.0f} MB outside the Java heap (JVM internals, the Go runtime, "
                     "Arrow batches in C memory); the advice is that x 1.25, rounded up to 128 MiB and at least "
                     "Spark's default max(384 MiB, 10% of spark.executor.memory). In local mode the one JVM is "
                     "also the driver, so an executor's figure is at most this."
                     + (f" For comparison, the Python source's session held {py:.0f} MB outside the heap, Python "
                        "workers included (which spark.executor.memoryOverhead also has to hold unless "
                        "spark.executor.pyspark.memory is set)." if py else ""), "")

    def write(self) -> None:
        wr = self.r.get("write", [])
        self.add("## 3. Write, 1 KB messages (payload only) to the load server", "",
                 "Spark rows: the in-memory Arrow source (payload column, 2 x 100,000 rows per micro-batch) "
                 "into the pubsub-go sink, measured from query progress like section 2; the same source into "
                 "a Python Arrow stream writer that drops every batch (bench/peers/discard_sink.py, "
                 "`bench-discard`) is the fair ceiling, the path through Spark's Python writer that any Python "
                 "sink takes; into noop, Spark alone. Peers: N messages published, timed until every one is "
                 "acknowledged by the server. *server count* = messages the load server counted during the run "
                 "(for the Spark sink: the whole query, warm-up included).", "")
        rows = []
        for c, name in WRITE_NAMES.items():
            errs = _errors(wr, client=c)
            rows.append([name, fmt(_spread(wr, "msgs_per_sec", client=c)), fmt(_spread(wr, "cores", client=c)),
                         fmt(_spread(wr, "per_core", client=c)),
                         "—" if c.endswith("ceiling") else fmt(_spread(wr, "server_published", client=c)),
                         fmt(_spread(wr, "max_rss_mb", client=c), " MB"),
                         f"{len(errs)} failed: {errs[0][:200]}" if errs else ""])
        self.table(["writer", "msgs/s", "cores", "msgs/s per core", "server count", "peak RSS", "notes"], rows)

    def jvm_sink(self) -> None:
        from .jvm_sink import report as sink_report

        js = self.r.get("jvm_sink") or {}
        if not js.get("rows"):
            return
        self.add("## 3b. The JVM sink beside the Python sink and noop", "",
                 "Spark's rate-micro-batch source with a 1 KB payload made in Spark SQL (no Python worker in "
                 "front of the sinks, so what differs is the sink; `--source python` of the tool reads section "
                 "3's in-memory Arrow source instead) by writeStream into the JVM sink "
                 "(docs/jvm.md, \"How it writes\"), the Python sink and Spark's noop sink (the ceiling), local[2], "
                 "to one load server, in alternating rounds (each sink first in turn). With the jar on a session "
                 '`format("pubsub-go")` is the JVM sink, so it runs in a Spark session of its own '
                 "(bench/harness/jvm_sink.py, as section 2b's source); the Python sink and noop run in the run's "
                 "session. A sink's run counts only if the load server counted at least its rows. Target (issue "
                 "54): JVM sink ≥ 1.5x the Python sink. `python bench/tools/jvm_sink.py` runs this section alone.",
                 "", "```", *sink_report(js), "```", "")

    def handoff(self) -> None:
        ho = self.r.get("handoff", {})
        self.add("## 4. Hand-off: one batch from Go to Python", "",
                 "`Subscriber.next_batch(rows)` timed on messages already buffered: the subscriber is filled to "
                 "its flow-control limit (5 batches), so nothing arrives during the timed calls, then drained "
                 "batch by batch (bench/peers/pghandoff.py), one subscriber per batch size. This is the whole "
                 "call: taking the batch the streams built in C memory as the messages arrived, exporting it "
                 "and the ack ids through the C Data Interface and importing both into pyarrow (the schema is "
                 "imported once per subscriber). *pyarrow import* times only the import of an identical "
                 "exported batch + ack ids (the Python-side floor); *native call* is `stats()`, a call that "
                 "moves no Arrow data. The first call after each fill (1 call in 5, so it decides p99) is "
                 "several times slower than the others (*first call p50*): the streams have just pushed "
                 "megabytes through the CPU caches, and every part of the call, Python's included, runs "
                 "cold; the calls after it show the hand-off itself. A batch is at most 8 MiB of Arrow memory "
                 "(the library's lot size cap), so 10,000 rows of 1 KB come as batches of ~7,500.", "")
        rows = []
        for size in sorted({p["payload"] for p in ho.get("peer", [])}):
            for n in ("100", "1000", "10000"):
                def sp(k: str, part: str = "next_batch", n: str = n, size: int = size) -> Spread | None:
                    return Spread.of([p[part][n][k] for p in ho["peer"] if p["payload"] == size and n in p[part]])

                if sp("p50_us") is None:
                    continue
                got = Spread.of([p["next_batch"][n].get("rows_per_call", int(n)) for p in ho["peer"]
                                 if p["payload"] == size and n in p["next_batch"]])
                label = n if got is None or round(got.median) == int(n) else f"{n} asked, {got.median:,.0f} per call"
                rows.append([_size(size), label, fmt(sp("p50_us"), " µs"), fmt(sp("p99_us"), " µs"),
                             fmt(sp("p50_us", "next_batch_first"), " µs"), fmt(sp("p99_us", "next_batch_warm"), " µs"),
                             fmt(sp("p50_ns_per_row"), " ns"), fmt(sp("p99_ns_per_row"), " ns"),
                             fmt(sp("p50_us", "pyarrow_import"), " µs"), fmt(sp("p99_us", "pyarrow_import"), " µs")])
        self.table(["payload", "rows", "next_batch p50", "p99", "first call p50", "p99 of the other calls",
                    "per row p50", "per row p99",
                    "pyarrow import p50", "p99"], rows)
        st = Spread.of([p["stats_call"]["p50_us"] for p in ho.get("peer", [])])
        if st:
            self.add(f"Native call overhead (`stats()`, JSON out, no Arrow): p50 {fmt(st, ' µs')}.", "")
        go = ho.get("go", [])
        if go:
            self.add("Go-side benchmarks of the batch building, which happens on the streams as messages "
                     "arrive (`go test -bench`):", "")
            rows = []
            for g in go:
                s = Spread.of(g.get("ns_per_op", []))
                per_row = Spread.of([x / g["rows_per_op"] for x in g.get("ns_per_op", [])])
                rows.append([g["what"], fmt(s, " ns/op"), fmt(per_row, " ns/row"),
                             "" if "error" not in g else f"failed: {' '.join(g['error'])[:200]}", f"`{g['command']}`"])
            self.table(["benchmark", "time", "per row", "notes", "command"], rows)

    def memory(self, pngs: list[str]) -> None:
        mem = self.r.get("memory", {})
        dp, e2e = self.r.get("dataplane", []), self.r.get("spark", [])
        self.add("## 5. Memory", "")
        if mem.get("samples"):
            rate = mem["messages"] / max(mem["seconds"], 1)
            self.add(f"Drift: the pubsub_go pull loop (next_batch 1000 + ack) in its own process, 1 KB messages "
                     f"paced at {rate:,.0f} msg/s for {mem['seconds'] / 60:.1f} min ({mem['messages']:,} messages), "
                     "running in the background while the other sections ran (stopped, its time not counted, while "
                     "sections 2 and 4 ran). It stands in for the executor's "
                     "Python worker, which runs the same loop (plus Spark's own code) inside Spark.", "")
            self.table(["RSS after warm-up", "RSS at the end", "max RSS", "slope after warm-up", "peak RSS (getrusage)",
                        "CPU"],
                       [[f"{mem['rss_start_mb']:.1f} MB", f"{mem['rss_end_mb']:.1f} MB", f"{mem['rss_max_mb']:.1f} MB",
                         f"{mem['slope_mb_per_min']:+.3f} MB/min", f"{mem['max_rss_mb']:.1f} MB",
                         f"{mem['cpu_seconds'] / mem['seconds']:.2f} cores"]])
        elif mem.get("error"):
            self.add(f"Drift run failed: {mem['error']}", "")
        for p in pngs:
            self.add(f"![{p}]({p})", "")
        rows = []
        for size in sorted({r["payload"] for r in dp}):
            rows.append([_size(size)] + [fmt(_spread(dp, "max_rss_mb", client=c, payload=size), " MB")
                                         for c in DP_NAMES])
        if rows:
            self.add("Peak RSS of each consumer process at full rate (section 1):", "")
            self.table(["payload"] + list(DP_NAMES.values()), rows)
        rows = [[E2E_NAMES[s], fmt(_spread(e2e, "peak_python_rss_mb", source=s)),
                 fmt(_spread(e2e, "peak_python_rss_sum_mb", source=s))] for s in E2E_NAMES]
        if e2e:
            self.add("Spark's Python processes during section 2 (MB; largest single process, and all together):", "")
            self.table(["source", "largest Python process", "sum of Python processes"], rows)

    def commands(self) -> None:
        self.add("## Commands", "", "The whole run: `" + self.r["command"] + "` (bench/run.py; `--report-only` "
                 "rewrites this file from bench/results/results.json). It builds into a temp dir `$BUILD`:", "", "```",
                 "go build -o $BUILD/loadserver ./bench/loadserver",
                 "go build -o $BUILD/goreceive ./bench/peers/goreceive",
                 "go build -o $BUILD/gopublish ./bench/peers/gopublish",
                 "go build -buildmode=c-shared -trimpath -ldflags='-s -w' -o $BUILD/libpubsubgo.so ./go/capi",
                 "$BUILD/loadserver --addr 127.0.0.1:0 --http 127.0.0.1:0 --payload-bytes N --attributes 2",
                 "```", "", "and runs every Python process with `PYTHONPATH=python:bench/peers "
                 "PUBSUB_GO_LIBRARY=$BUILD/libpubsubgo.so` (the Go peers with `PUBSUB_EMULATOR_HOST`). Peer "
                 "commands, one of each kind (the others differ in payload size and subscription name):", "",
                 "```")
        seen = set()
        rows = self.r.get("dataplane", []) + self.r.get("write", []) + self.r.get("handoff", {}).get("peer", [])[:1]
        if self.r.get("memory", {}).get("command"):
            rows.append({"command": self.r["memory"]["command"], "client": "drift"})
        for r in rows:
            c = r.get("command")
            key = " ".join(c.split()[:2]) if c else None  # the program (and script)
            if c and key not in seen:
                seen.add(key)
                self.add(_short(c, self.r.get("build_dir", "")))
        self.add("```", "", "Spark (section 2, this process is the driver; `local[2]`, noop sink):", "", "```python",
                 'spark.readStream.format("pubsub-go").option("subscriptionId", SUB).option("emulatorHost", HOST)',
                 '    .option("numPartitions", "2").option("batchLogLocation", TMP)'
                 + "".join(f'.option("{k}", "{v}")' for k, v in self.r.get("spark_tuned", {}).items())
                 + '.load()',
                 '    .writeStream.format("noop").option("checkpointLocation", TMP2).start()',
                 'spark.readStream.format("bench-plain-pubsub").option("subscription", SUB)'
                 '.option("emulatorHost", HOST).option("numPartitions", "2") ...',
                 'spark.readStream.format("bench-arrow").option("numPartitions", "2").option("rowsPerPartition", '
                 '"100000").option("payloadBytes", "1024") ...',
                 '# section 2b, a session of its own (a child process) with the JVM source\'s jar:',
                 'spark = pubsub_go.configure_spark(SparkSession.builder.master("local[2]") ...).getOrCreate()',
                 'spark.readStream.format("pubsub-go") ...   # as the default-options row above: the JVM source',
                 '# section 3:',
                 'spark.readStream.format("bench-arrow").option("schema", "publish") ... '
                 '.writeStream.format("pubsub-go").option("topicId", TOPIC).option("emulatorHost", HOST).start()',
                 '    # fair ceiling: .writeStream.format("bench-discard"); Spark ceiling: .format("noop")',
                 "```", "")


def _short(cmd: str, build_dir: str) -> str:
    """A command as someone would type it from the repository root."""
    import sys

    from .procs import REPO

    cmd = cmd.replace(sys.executable, "python").replace(str(REPO) + "/", "")
    if build_dir:
        cmd = cmd.replace(build_dir, "$BUILD")
    return cmd


def _link(bench_file: str, page: Path) -> str:
    """A link from the page to a file of bench/, wherever --out put the page."""
    return os.path.relpath(BENCH / bench_file, page.resolve().parent)


def write(res: dict, out: Path, pngs: dict[str, list[str]]) -> None:
    rep = Report(res)
    m = res["machine"]
    rep.add("# Benchmarks: pubsub-go side by side", "",
            f"Generated by `{res['command']}` on {res['date']} in {res['minutes']:.1f} min "
            f"({res['plan']} plan: every figure is the median over {res['reps']} run(s) with [min–max]).", "",
            f"Machine: {m['nproc']} cores, {m['cpu']}, {m['memory']}, Linux {m['kernel']}. Load average "
            f"(1/5/15 min) at start {res['load_start']}, at end {res['load_end']}: **the machine is shared with "
            "other agents' builds and test runs**, so absolute figures move by ±20% or more between runs; ratios "
            "of interleaved runs are steadier.", "",
            f"Software: Python {m['python']}, PySpark {m['pyspark']}, pyarrow {m['pyarrow']}, google-cloud-pubsub "
            f"{m['google-cloud-pubsub']}, grpcio {m['grpcio']}, {m['go']}, {m['java']}. Source: commit "
            f"{m['commit']}. Load server: bench/loadserver (synthetic messages at line rate, see README).", "",
            "What limits throughput, memory and latency, each with the command that shows it: "
            f"[findings.md]({_link('findings.md', out)}). Figures of the other benchmarks, each written by its "
            f"own tool (bench/README.md): [decode]({_link('results/decode_results.md', out)}), "
            f"[Google's emulator]({_link('results/emulator_results.md', out)}), "
            f"[PySpark 4.0 beside 4.3]({_link('results/compat_results.md', out)}), "
            f"[restart fix]({_link('results/restart_results.md', out)}), "
            f"latency ([plot]({_link('results/latency.png', out)}), `bench/tools/latency.py`).",
            "")
    rep.headline()
    rep.dataplane(pngs.get("dataplane", []))
    rep.spark()
    rep.jvm()
    rep.write()
    rep.jvm_sink()
    rep.handoff()
    rep.memory(pngs.get("memory", []))
    rep.commands()
    if res.get("failures"):
        rep.add("## Failures during the run", "")
        rep.add(*[f"- {f}" for f in res["failures"]], "")
    out.write_text("\n".join(rep.lines))
