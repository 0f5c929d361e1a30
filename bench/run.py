"""Runs the side-by-side benchmarks and writes bench/results.md whole: the
headline and every table from this one run. The raw figures
(bench/results/results.json) and the PNG plots go under bench/results/.

    python bench/run.py            # full run, ~15 min on 2 cores
    python bench/run.py --quick    # smoke check, ~3 min, single runs
    python bench/run.py --report-only   # rewrite the page from results/results.json

Sections: 1 data plane without Spark, 2 Spark end to end, 2b the JVM
source beside the Python source and the ceiling (the JVM source in a Spark
session of its own, a child process), 3 write, 4 Go -> Python hand-off,
5 memory (its long drift run goes on in the background from the start).
Every server and peer listens on 127.0.0.1 and is stopped by its own pid.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from harness import dataplane, handoff, jvm_e2e, jvm_sink, machine, plots, report, spark_e2e, write  # noqa: E402
from harness.log import elapsed, say  # noqa: E402
from harness.memory import Drift  # noqa: E402
from harness.plan import FULL, QUICK  # noqa: E402
from harness.procs import Build  # noqa: E402

DATA = "results"  # beside results.md: results.json and the plots


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke check: ~3 min, single runs")
    ap.add_argument("--lib", help="use this libpubsubgo.so instead of building one from the tree")
    ap.add_argument("--out", default=str(BENCH),
                    help="directory for results.md; results.json and the PNGs go into its results/ (default: bench)")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite results.md and the PNGs from an earlier run's results/results.json")
    ap.add_argument("--jar", help="the JVM front end's jar for sections 2b and 3b (default: jvm/build.sh builds it "
                                   "from the tree)")
    ap.add_argument("--skip", default="",
                    help="comma-separated sections to skip: dataplane,spark,jvm,write,jvm_sink,handoff,memory")
    a = ap.parse_args()
    plan = QUICK if a.quick else FULL
    skip = set(filter(None, a.skip.split(",")))
    out = Path(a.out)
    data = out / DATA
    data.mkdir(parents=True, exist_ok=True)
    if a.report_only:
        write_report(json.loads((data / "results.json").read_text()), out)
        return 0

    res: dict = {"command": "python bench/run.py" + (" --quick" if a.quick else ""), "plan": plan.name,
                 "reps": plan.reps, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                 "machine": machine.describe(), "load_start": machine.load(), "failures": [],
                 "spark_tuned": spark_e2e.TUNED}
    say(f"{plan.name} run: {res['machine']['nproc']} cores, {res['machine']['cpu']}, load {res['load_start']}")
    say("building the load server, the Go peers and libpubsubgo.so from this tree")
    build = Build.make(a.lib)
    res["build_dir"] = str(build.dir)

    def section(name: str, fn):
        if name in skip:
            return None
        try:
            return fn()
        except Exception as e:
            say(f"section {name} FAILED: {e}")
            traceback.print_exc()
            res["failures"].append(f"section {name}: {str(e)[:1000]}")
            return None

    drift = section("memory", lambda: Drift(build, plan))
    spark = None
    scratch = tempfile.mkdtemp(prefix="pubsub-go-bench-scratch-")  # Spark checkpoints and batch logs
    try:
        res["dataplane"] = section("dataplane", lambda: dataplane.run(build, plan)) or []
        if not {"spark", "jvm", "write", "jvm_sink"} <= skip:
            say("starting Spark (local[2])")
            from harness.sparkrun import session

            spark = session(build)
        if drift is not None and not {"spark", "jvm"} <= skip:
            drift.pause()
        try:
            res["spark"] = section("spark", lambda: spark_e2e.run(spark, build, plan, scratch)) or []
            res["jvm"] = section("jvm", lambda: jvm_e2e.run(spark, build, plan, scratch, jar=a.jar)) or {}
        finally:
            if drift is not None:
                drift.resume()
        res["write"] = section("write", lambda: write.run(spark, build, plan, scratch)) or []
        res["jvm_sink"] = section("jvm_sink", lambda: jvm_sink.run(spark, build, plan, scratch, jar=a.jar)) or {}
        if spark is not None:
            spark.stop()
            spark = None
        if drift is not None and "handoff" not in skip:
            drift.pause()  # p99 latencies on 2 cores are at the mercy of any background process
        try:
            res["handoff"] = section("handoff", lambda: handoff.run(build, plan)) or {}
        finally:
            if drift is not None:
                drift.resume()
        if drift is not None:
            res["memory"] = section("memory", drift.finish) or {}
            drift = None
    finally:
        if spark is not None:
            spark.stop()
        if drift is not None:
            drift.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    res["load_end"] = machine.load()
    res["minutes"] = elapsed() / 60
    (data / "results.json").write_text(json.dumps(res, indent=1, default=str))
    write_report(res, out)
    if res["failures"]:
        say(f"Spark's log is in {build.dir / 'spark.log'}")
    else:
        shutil.rmtree(build.dir, ignore_errors=True)
    say(f"done in {res['minutes']:.1f} min: {out / 'results.md'}")
    return 1 if res["failures"] else 0


def write_report(res: dict, out: Path) -> None:
    """The page holds only what this run measured: findings that need
    profiles or other tools live in bench/findings.md, which it links."""
    data = out / DATA
    pngs = {"dataplane": [f"{DATA}/{p}" for p in plots.dataplane(res.get("dataplane", []), data)],
            "memory": [f"{DATA}/{p}" for p in plots.drift(res.get("memory", {}), data)]}
    report.write(res, out / "results.md", pngs)


if __name__ == "__main__":
    sys.exit(main())
