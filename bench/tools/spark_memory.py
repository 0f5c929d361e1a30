"""Peak RSS of an executor's Python worker at every payload size (issue 12,
"bounded memory"), beside Google's Go client.

For each payload size (100 B, 1 KB, 10 KB, 100 KB, 1 MB) it runs the
pubsub-go source with default options (only subscriptionId, the emulator
host and a batch log; numPartitions 2) from the load server into `noop`,
local[2], and samples the RSS of Spark's Python processes every 0.5 s;
then Google's Go client (`goreceive`, default flow control: 1000
messages) against the same server, peak RSS (VmHWM). Sizes alternate
per repetition so drifting machine load hits all alike. The budget is
`maxWorkerMemoryBytes` (docs/source.md; the source derives its flow control
from it); the bound checked is peak <= 1.25 x budget + 150 MiB.

    python bench/tools/spark_memory.py [--reps 3] [--sizes 100,1024,...] [--lib PATH]
        [--option key=value ...]   extra source options (e.g. maxWorkerMemoryBytes=...)

Prints one JSON line per run and a Markdown table (medians [min-max]).
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

from harness.procs import Build, LoadServer, create, run_peer  # noqa: E402
from harness.sparkrun import measure, session  # noqa: E402
from pubsub_go.spark.read.options.source import DEFAULT_WORKER_MEMORY  # noqa: E402

MiB = 1 << 20


def spark_run(spark, server: LoadServer, sub: str, scratch: str, options: dict[str, str]) -> dict:
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", server.host)
         .option("numPartitions", "2").option("batchLogLocation", tempfile.mkdtemp(prefix="bl-", dir=scratch)))
    for k, v in options.items():
        r = r.option(k, v)
    return measure(r.load(), scratch, warmup=4, window=8)


def go_run(build: Build, server: LoadServer, sub: str) -> float:
    res = run_peer([str(build.goreceive), "--subscription", sub, "--duration", "4s", "--warmup", "2s",
                    "--max-outstanding", "1000"], {**build.env(), "PUBSUB_EMULATOR_HOST": server.host}, timeout=120)
    return res.max_rss_mb


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="100,1024,10240,102400,1048576")
    ap.add_argument("--lib")
    ap.add_argument("--option", action="append", default=[])
    a = ap.parse_args()
    options = dict(o.split("=", 1) for o in a.option)
    budget = int(options.get("maxWorkerMemoryBytes", DEFAULT_WORKER_MEMORY))
    sizes = [int(s) for s in a.sizes.split(",")]
    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="spark-memory-")
    runs: list[dict] = []
    try:
        for rep in range(a.reps):
            for size in sizes:
                server = LoadServer(build, size)
                try:
                    subs = [f"projects/bench/subscriptions/mem-{size}-{rep}-{w}" for w in ("pg", "go")]
                    create(build, server, "projects/bench/topics/mem", subs)
                    m = spark_run(spark, server, subs[0], scratch, options)
                    go = go_run(build, server, subs[1])
                finally:
                    server.stop()
                row = {"payload": size, "rep": rep, "worker_peak_mb": m["peak_python_rss_mb"],
                       "python_sum_peak_mb": m["peak_python_rss_sum_mb"], "rows_per_sec": m["rows_per_sec"],
                       "rows_per_batch": m["rows_per_batch"], "go_peak_mb": go}
                runs.append(row)
                print(json.dumps(row), flush=True)
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    bound = 1.25 * budget / MiB + 150
    print(f"\nbudget maxWorkerMemoryBytes = {budget / MiB:.0f} MiB; bound 1.25 x budget + 150 = {bound:.0f} MiB\n")
    print("| payload | largest Spark Python process, peak MiB | within bound | Google Go client (Receive), peak MiB "
          "| pubsub-go rows/s |")
    print("|---|---|---|---|---|")
    for size in sizes:
        rs = [r for r in runs if r["payload"] == size]

        def fmt(key: str, rs: list[dict] = rs) -> str:
            v = [r[key] for r in rs]
            return f"{statistics.median(v):,.0f} [{min(v):,.0f}–{max(v):,.0f}]"

        ok = max(r["worker_peak_mb"] for r in rs) <= bound
        print(f"| {size:,} B | {fmt('worker_peak_mb')} | {'yes' if ok else 'NO'} | {fmt('go_peak_mb')} "
              f"| {fmt('rows_per_sec')} |")


if __name__ == "__main__":
    main()
