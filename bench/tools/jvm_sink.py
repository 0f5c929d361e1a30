"""How fast is the JVM sink (docs/jvm.md, "How it writes") beside the
Python sink and Spark's noop sink, on the same source? Section 3b of
bench/run.py alone: Spark's rate-micro-batch source with 1 KB payloads
(--source python: section 3's in-memory bench-arrow source) by writeStream
to the load server, local[2]; the JVM sink in a
Spark session of its own (a child process, the jar put on it by
pubsub_go.configure_spark), the Python sink and noop in this process's
session without the jar; alternating rounds, each sink first in turn.

    python bench/tools/jvm_sink.py [--rounds 3] [--warmup 6] [--window 10] [--source jvm|python]
                                   [--jar PATH] [--lib PATH] [--json OUT]

Prints rows/s per sink per round, the ratios per round with their median
and range (the issue's target: JVM sink >= 1.5x the Python sink), CPU per
row by process, and the load average per round (the machine may be shared).
By default jvm/build.sh builds the jar from this tree with the library
built from this tree; --jar takes a built one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from harness import jvm_sink  # noqa: E402
from harness.plan import FULL  # noqa: E402
from harness.procs import Build  # noqa: E402
from harness.sparkrun import session  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=FULL.reps)
    ap.add_argument("--warmup", type=float, default=FULL.spark_warmup)
    ap.add_argument("--window", type=float, default=FULL.spark_window)
    ap.add_argument("--jar", help="the JVM sink's jar (default: jvm/build.sh builds one from this tree)")
    ap.add_argument("--lib", help="libpubsubgo.so to use instead of building one from the tree")
    ap.add_argument("--source", choices=jvm_sink.SOURCES, default="jvm",
                    help="what every sink reads: Spark's rate-micro-batch source (jvm, the default) or "
                         "the in-memory bench-arrow Python source (python)")
    ap.add_argument("--json", help="write the raw figures here")
    a = ap.parse_args()
    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="pubsub-go-jvm-sink-")
    try:
        res = jvm_sink.run(spark, build, FULL, scratch, jar=a.jar, rounds=a.rounds, warmup=a.warmup, window=a.window,
                           source=a.source)
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    res["command"] = "python bench/tools/jvm_sink.py " + " ".join(sys.argv[1:])
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=str))
    print("\n".join(jvm_sink.report(res)))
    return 1 if any("error" in r for r in res["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
