"""Spark end to end under two (or more) Python environments, alternating:
the streaming sink's msgs/s and the source's rows/s with default options,
both against bench/loadserver (1 KB messages, local[2]).

Two uses:
- PySpark versions side by side (issue 37: on 4.0 the row-based writer,
  on 4.3 the Arrow writer): venvs holding each PySpark and the same
  pubsub-go wheel; every child uses one library (--lib, default the one
  installed beside the first interpreter), so only Spark and PySpark
  differ.
- Two builds of pubsub-go side by side (before/after a change): venvs
  holding the same PySpark and each its own wheel, with --own-lib so each
  child loads the libpubsubgo.so installed beside its own interpreter.

Each measurement runs in a child process under the given interpreter,
the order reversed every other repetition. Rates come from the query
progress after a warm-up (harness/sparkrun.py's measure). Writes the
figures as JSON to --out and prints a Markdown table.

    python bench/tools/compat_bench.py --python 4.0=/tmp/venv-spark40/bin/python \\
        --python 4.3=/tmp/venv-spark43/bin/python [--reps 2] [--out bench/results/compat_results.json]
    python bench/tools/compat_bench.py --own-lib --python old=/tmp/venv-old/bin/python \\
        --python new=/tmp/venv-new/bin/python --base old --reps 4 --out /tmp/ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
SIZE = 1024
TOPIC = "projects/bench/topics/compat"
SUBSCRIPTION = "projects/bench/subscriptions/compat-src"


def child(args: argparse.Namespace) -> None:
    """Runs under the measured PySpark: one sink and one source measurement."""
    sys.path[:0] = [str(BENCH), str(BENCH / "peers")]
    import pyspark

    from harness.procs import Build, LoadServer, create
    from harness.sparkrun import measure

    d = json.loads(args.child)
    build = Build(Path(d["dir"]), Path(d["loadserver"]), Path(d["goreceive"]), Path(d["gopublish"]),
                  Path(d["lib"]))
    env = {"PUBSUB_GO_LIBRARY": str(build.lib), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "PYTHONPATH": str(BENCH / "peers")}
    os.environ.update(env)
    os.environ.pop("PUBSUB_EMULATOR_HOST", None)
    from arrow_source import ArrowMemorySource
    from pyspark.sql import SparkSession

    from pubsub_go.spark.compat import spark_features
    from pubsub_go.spark.provider import PubSubDataSource

    spark = (SparkSession.builder.master("local[2]").appName("pubsub-go-compat-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.memory", "2g")
             .config("spark.sql.streaming.stopTimeout", "60s").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(ArrowMemorySource)
    try:
        spark.dataSource.register(PubSubDataSource)
    except Exception as e:  # 4.0/4.1: auto-registration registered it already
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
    out: dict = {"pyspark": pyspark.__version__, "python": sys.version.split()[0], "features": spark_features()}
    scratch = tempfile.mkdtemp(prefix="compat-bench-")
    try:
        # JVM warm-up, not counted.
        arrow = (spark.readStream.format("bench-arrow").option("schema", "publish").option("numPartitions", "2")
                 .option("rowsPerPartition", "100000").option("payloadBytes", str(SIZE)))
        measure(arrow.load(), scratch, warmup=2, window=args.window / 2)
        server = LoadServer(build, SIZE)
        try:
            create(build, server, TOPIC, [SUBSCRIPTION])
            m = measure(arrow.load(), scratch, args.warmup, args.window, sink="pubsub-go",
                        sink_options={"topicId": TOPIC, "emulatorHost": server.host})
            out["sink_msgs_per_sec"] = m["rows_per_sec"]
            src = (spark.readStream.format("pubsub-go").option("subscriptionId", SUBSCRIPTION)
                   .option("emulatorHost", server.host).option("numPartitions", "2")
                   .option("batchLogLocation", os.path.join(scratch, "batchlog")).load())
            m = measure(src, scratch, args.warmup, args.window)
            out["source_rows_per_sec"] = m["rows_per_sec"]
            out["source_rows_per_batch"] = m["rows_per_batch"]
        finally:
            server.stop()
    finally:
        spark.stop()
    Path(args.out).write_text(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", action="append", default=[], help="LABEL=INTERPRETER, e.g. 4.0=/tmp/venv/bin/python")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--warmup", type=float, default=6.0)
    ap.add_argument("--window", type=float, default=15.0)
    ap.add_argument("--lib", help="libpubsubgo.so for every child (default: the first interpreter's)")
    ap.add_argument("--base", help="the label the ratios divide by (default: the last --python)")
    ap.add_argument("--own-lib", action="store_true",
                    help="each child loads the libpubsubgo.so installed beside its own interpreter (two wheels)")
    ap.add_argument("--out", default=str(BENCH / "results" / "compat_results.json"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    sys.path[:0] = [str(BENCH)]
    from harness.procs import Build

    pythons = [p.split("=", 1) for p in args.python]
    if len(pythons) < 2:
        raise SystemExit("give at least two --python LABEL=INTERPRETER")
    if args.base and args.base not in dict(pythons):
        raise SystemExit(f"--base {args.base}: not a label of --python ({', '.join(label for label, _ in pythons)})")
    if args.own_lib and args.lib:
        raise SystemExit("--own-lib and --lib exclude each other: --own-lib takes each interpreter's library")
    libs = {label: installed_lib(py) for label, py in pythons} if args.own_lib else {}
    build = Build.make(args.lib or libs.get(pythons[0][0]) or installed_lib(pythons[0][1]))
    base_spec = {k: str(getattr(build, k)) for k in ("dir", "loadserver", "goreceive", "gopublish", "lib")}
    specs = {label: json.dumps({**base_spec, "lib": libs.get(label, base_spec["lib"])}) for label, _ in pythons}
    results: dict[str, list[dict]] = {label: [] for label, _ in pythons}
    for rep in range(args.reps):
        order = pythons if rep % 2 == 0 else list(reversed(pythons))
        for label, py in order:
            out = tempfile.mktemp(suffix=".json")
            r = subprocess.run([py, __file__, "--child", specs[label], "--out", out, "--warmup", str(args.warmup),
                                "--window", str(args.window)], capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                raise SystemExit(f"{label} run {rep + 1} failed:\n{r.stderr[-4000:]}")
            res = json.loads(Path(out).read_text())
            print(f"rep {rep + 1} {label} (PySpark {res['pyspark']}): sink {res['sink_msgs_per_sec']:,.0f} msgs/s, "
                  f"source {res['source_rows_per_sec']:,.0f} rows/s", flush=True)
            results[label].append(res)
    Path(args.out).write_text(json.dumps(results, indent=1))
    base = args.base or pythons[-1][0]
    print("\n| run | PySpark | streaming sink msgs/s (median of runs) | source rows/s, default options | sink, source "
          f"vs {base} |\n|---|---|---|---|---|")
    med = {label: (statistics.median(r["sink_msgs_per_sec"] for r in rs),
                   statistics.median(r["source_rows_per_sec"] for r in rs)) for label, rs in results.items()}
    for label, rs in results.items():
        sink = ", ".join(f"{r['sink_msgs_per_sec']:,.0f}" for r in rs)
        src = ", ".join(f"{r['source_rows_per_sec']:,.0f}" for r in rs)
        print(f"| {label} | {rs[0]['pyspark']} | {med[label][0]:,.0f} ({sink}) | {med[label][1]:,.0f} ({src}) | "
              f"{med[label][0] / med[base][0]:.2f}x, {med[label][1] / med[base][1]:.2f}x |")


def installed_lib(python: str) -> str:
    """The libpubsubgo.so of the pubsub_go installed for this interpreter."""
    return subprocess.run(
        [python, "-c", "import pubsub_go, pathlib; print(pathlib.Path(pubsub_go.__file__).parent / "
                       "'_lib' / 'libpubsubgo.so')"], capture_output=True, text=True, check=True).stdout.strip()


if __name__ == "__main__":
    main()
