"""Side-by-side Spark configurations in one session: each round runs every
configuration once, in turn, into noop (local[2], 1 KB messages, the load
server of section 2), so that a machine whose speed drifts (another tenant)
moves them alike. Prints each run and, per configuration, the median
rows/s and its ratio to the first configuration of the same round.

    python bench/tools/spark_ab.py --config NAME=SOURCE[,key=value...] [--config ...]
                             [--rounds 3] [--warmup 6] [--window 14] [--lib PATH] [--json out.json]

SOURCE is one of section 2's sources (pubsub-go, pubsub-go-defaults,
plain-python, ceiling); the key=value pairs are more options for it, e.g.
    --config ceiling=ceiling --config ceiling-200k=ceiling,rowsPerPartition=200000
    --config defaults=pubsub-go-defaults --config d200k=pubsub-go-defaults,maxRecordsPerPartition=200000
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from harness import spark_e2e  # noqa: E402
from harness.procs import Build, LoadServer, create  # noqa: E402
from harness.sparkrun import measure, session  # noqa: E402


def parse_config(text: str) -> tuple[str, str, dict[str, str]]:
    name, _, spec = text.partition("=")
    source, *pairs = spec.split(",")
    if source not in spark_e2e.SOURCES:
        raise SystemExit(f"--config {text!r}: source {source!r} is not one of {', '.join(spark_e2e.SOURCES)}")
    return name, source, dict(p.split("=", 1) for p in pairs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", required=True, help="NAME=SOURCE[,key=value...] (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=6)
    ap.add_argument("--window", type=float, default=14)
    ap.add_argument("--lib", help="libpubsubgo.so to use instead of building one from the tree")
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    configs = [parse_config(c) for c in a.config]

    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="pubsub-go-spark-ab-")
    server = None
    runs: list[dict] = []
    try:
        print("JVM warm-up (ceiling source, not counted)", flush=True)
        measure(spark_e2e.reader(spark, "ceiling", "", "", 1024, ""), scratch, warmup=2, window=4)
        server = LoadServer(build, 1024)
        subs = {(name, r): f"projects/bench/subscriptions/ab-{name}-{r}"
                for name, _, _ in configs for r in range(a.rounds)}
        create(build, server, "projects/bench/topics/ab", list(subs.values()))
        for r in range(a.rounds):
            for name, source, extra in configs:
                m = measure(spark_e2e.reader(spark, source, server.host, subs[(name, r)], 1024,
                                             tempfile.mkdtemp(prefix="batchlog-", dir=scratch), extra),
                            scratch, a.warmup, a.window)
                run = {"round": r, "config": name, "source": source, "options": extra,
                       **{k: v for k, v in m.items() if k != "progress"}}
                runs.append(run)
                print(f"round {r + 1}/{a.rounds} {name}: {m['rows_per_sec']:,.0f} rows/s, "
                      f"{m['rows_per_batch']:,.0f} rows per micro-batch, peak worker RSS "
                      f"{m['peak_python_rss_mb']:.0f} MB", flush=True)
    finally:
        if server is not None:
            server.stop()
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    first = configs[0][0]
    print(f"\n| configuration | rows/s, median [min-max] | ratio to {first} in the same round, median [min-max] |")
    print("|---|---|---|")
    for name, _, _ in configs:
        rates = [x["rows_per_sec"] for x in runs if x["config"] == name]
        ratios = [x["rows_per_sec"] / y["rows_per_sec"] for x in runs if x["config"] == name
                  for y in runs if y["config"] == first and y["round"] == x["round"]]
        print(f"| {name} | {statistics.median(rates):,.0f} [{min(rates):,.0f}-{max(rates):,.0f}] | "
              f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}] |")
    if a.json:
        Path(a.json).write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
