"""How fast is the JVM source (docs/jvm.md) beside the Python source and the
Python ceiling, Spark end to end? Section 2b of bench/run.py alone: 1 KB
from the load server, default options, readStream into noop, local[2];
the JVM source in a Spark session of its own (a child process, the jar put
on it by pubsub_go.configure_spark), the Python source
(`pubsub-go-defaults`) and the ceiling (`bench-arrow`) in this process's
session without the jar; alternating rounds, each source first in turn.

    python bench/tools/jvm_e2e.py [--rounds 3] [--warmup 6] [--window 10]
                                  [--jar PATH] [--lib PATH] [--json OUT] [--perf FILE]

Prints rows/s per source per round, JVM / ceiling and JVM / Python per
round, CPU per row by process (with, after each round, pubsub_go's
Subscriber receiving from the same load server with no Spark: what any
source on this data plane pays per row, and the bound that puts on one), the Spark JVM's peak RSS and what it holds
outside its heap, and the spark.executor.memoryOverhead advice. --jar
takes a built jar (e.g. "$(python3 -m pubsub_go jar)" run outside the
repository, the installed one); by default jvm/build.sh builds one from
this tree with the library built from this tree. --perf records the JVM
session's Spark JVM over the last round's window with `perf record -g`
(build the library with its symbols and pass it with --lib to see Go's:
`go build -buildmode=c-shared -o /tmp/libprof.so ./go/capi`), then
`perf report -i FILE --no-children --sort comm,dso`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from harness import jvm_e2e  # noqa: E402
from harness.plan import FULL  # noqa: E402
from harness.procs import Build  # noqa: E402
from harness.sparkrun import session  # noqa: E402

ROLES = {"jvm": "Spark JVM (driver + executor)", "workers": "Python workers", "driver": "driver Python process",
         "loadserver": "load server", "other": "the other session (idle)", "receiver": "the receiving process"}


def report(res: dict) -> list[str]:
    """The tool's printout, also what bench/results/jvm_results.md quotes."""
    rows = [r for r in res["rows"] if "error" not in r]
    out = [f"jar: {res['jar']}; {res['rounds']} rounds, warm-up {res['warmup']} s, window {res['window']} s", "",
           "rows/s per round:"]
    for r in range(res["rounds"]):
        got = {x["source"]: x for x in rows if x["round"] == r}
        out.append(f"  round {r + 1}: " + ", ".join(f"{s} {got[s]['rows_per_sec']:,.0f}" if s in got else f"{s} failed"
                                                  for s in (*jvm_e2e.SOURCES, jvm_e2e.RECEIVE)))
    for key, name in (("jvm_vs_ceiling", "JVM / ceiling"), ("jvm_vs_python", "JVM / Python source"),
                      ("python_vs_ceiling", "Python source / ceiling")):
        xs = [x[key] for x in res.get("ratios", []) if x[key] is not None]
        if xs:
            out.append(f"{name}: median {_median(xs):.2f}x "
                       f"[{min(xs):.2f}–{max(xs):.2f}], per round " + ", ".join(f"{x:.2f}x" for x in xs))
    out += ["", f"CPU µs per row by process (median over rounds; {jvm_e2e.RECEIVE}: pubsub_go's Subscriber reading "
            "the load server with no Spark, the floor under any source on this data plane):"]
    totals = {}
    for s in (*jvm_e2e.SOURCES, jvm_e2e.RECEIVE):
        rs = [x for x in rows if x["source"] == s and x.get("cpu_us_per_row")]
        if not rs:
            continue
        med = {k: _median([x["cpu_us_per_row"].get(k, 0.0) for x in rs]) for k in ROLES
               if any(k in x["cpu_us_per_row"] for x in rs)}
        totals[s] = tot = _median([x["cpu_us_per_row_total"] for x in rs])
        out.append(f"  {s:20s} total {tot:.2f}: " + ", ".join(f"{ROLES[k]} {v:.2f}" for k, v in med.items()))
    if "ceiling" in totals and jvm_e2e.RECEIVE in totals:
        out.append(f"  receiving alone costs {totals[jvm_e2e.RECEIVE] / totals['ceiling']:.2f}x the ceiling's whole "
                   "pipeline per row: a source on this data plane that keeps as many cores busy as the ceiling "
                   f"runs at most {totals['ceiling'] / totals[jvm_e2e.RECEIVE]:.2f}x the ceiling before Spark "
                   "adds its own work")
        ceiling_rps = _median([x["rows_per_sec"] for x in rows if x["source"] == "ceiling"])
        cores = os.cpu_count() or 1
        out.append(f"  with all {cores} cores busy, receiving alone would cap any such source at "
                   f"{cores * 1e6 / totals[jvm_e2e.RECEIVE]:,.0f} rows/s, "
                   f"{cores * 1e6 / totals[jvm_e2e.RECEIVE] / ceiling_rps:.2f}x the ceiling's rows/s")
    busy = {s: _median([x["rows_per_sec"] * x["cpu_us_per_row_total"] / 1e6 for x in rows
                        if x["source"] == s and x.get("cpu_us_per_row")]) for s in totals}
    out.append("  cores busy (rows/s x CPU per row): " + ", ".join(f"{s} {v:.2f}" for s, v in busy.items()))
    out += ["", "memory (max over rounds, MB): Spark JVM peak RSS / heap committed / outside the heap / "
            "Python workers; JVM VmHWM (whole life)"]
    for s in jvm_e2e.SOURCES:
        rs = [x for x in rows if x["source"] == s and "peak_jvm_rss_mb" in x]
        if rs:
            out.append(f"  {s:20s} " + " / ".join(f"{max(x[k] for x in rs):.0f}" for k in
                       ("peak_jvm_rss_mb", "peak_heap_committed_mb", "peak_non_heap_mb", "peak_workers_rss_mb"))
                       + f"; {max(x['jvm_vmhwm_mb'] for x in rs):.0f}")
    ov = res.get("overhead")
    if ov:
        out.append(f"spark.executor.memoryOverhead for the JVM source: {ov['advice_mib']} MiB (peak outside the "
                   f"heap {ov['jvm_peak_non_heap_mb']:.0f} MB x 1.25, rounded up to 128 MiB, at least Spark's "
                   f"default {jvm_e2e.DEFAULT_OVERHEAD_MIB})")
    for r in res["rows"]:
        if "error" in r:
            out.append(f"FAILED round {r['round'] + 1} {r['source']}: {r['error'][:300]}")
    return out


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=FULL.reps)
    ap.add_argument("--warmup", type=float, default=FULL.spark_warmup)
    ap.add_argument("--window", type=float, default=FULL.spark_window)
    ap.add_argument("--jar", help="the JVM source's jar (default: jvm/build.sh builds one from this tree)")
    ap.add_argument("--lib", help="libpubsubgo.so to use instead of building one from the tree")
    ap.add_argument("--json", help="write the raw figures here")
    ap.add_argument("--perf", help="perf record -g the JVM source's Spark JVM over the last round into this file")
    a = ap.parse_args()
    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="pubsub-go-jvm-e2e-")
    try:
        res = jvm_e2e.run(spark, build, FULL, scratch, jar=a.jar, rounds=a.rounds, warmup=a.warmup, window=a.window,
                          perf=a.perf and str(Path(a.perf).resolve()))
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    res["command"] = "python bench/tools/jvm_e2e.py " + " ".join(sys.argv[1:])
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=str))
    print("\n".join(report(res)))
    return 1 if any("error" in r for r in res["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
