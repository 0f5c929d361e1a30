"""How fast can Spark's ceiling run while the same 2 cores also ingest from
Pub/Sub? What the machine leaves for any source on pubsub_go's data plane.

A source reading at X rows/s must do two things on this machine: receive X
messages/s from the load server (the server's work, the network, parsing,
acks) and push X rows/s through Spark (what the ceiling, an in-memory
source into noop, does alone). This runs both at once, as separate
processes: the ceiling in Spark, and bench/peers/pgreceive.py (pubsub_go's
Subscriber into Arrow batches, acking) against a load server that makes
messages available at a fixed rate R. With R = FRACTION x the ceiling alone,
if the ceiling then falls well below R, the machine cannot do both at R: a
source on this data plane would have to do both jobs for much less than
these two processes do them, and it has more to do (the batch log, the
hand-over). Not a strict bound: one pipeline saves a process's overhead,
so a source may run a few percent above the point where both keep pace.

    python bench/tools/ceiling_under_load.py [--fraction 0.8] [--rounds 3]
                                       [--warmup 6] [--window 10] [--lib PATH]

Per round it measures the ceiling alone, then under ingestion at R, and
prints both, the rate the receiver got (the server's deliveries over the
ceiling's measuring window) and the CPU of each process.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from spark_cpu import cpu_by_process  # noqa: E402

from harness import spark_e2e  # noqa: E402
from harness.procs import Build, LoadServer, create, py  # noqa: E402
from harness.sparkrun import measure, session  # noqa: E402

PAYLOAD = 1024


def under_load(spark, build: Build, rate: int, scratch: str, warmup: float, window: float) -> dict:
    """The ceiling's rows/s while pgreceive ingests at up to rate msg/s."""
    server = LoadServer(build, PAYLOAD, 2, "--rate", str(rate))
    receiver = None
    try:
        sub = "projects/bench/subscriptions/under-load"
        create(build, server, "projects/bench/topics/under-load", [sub])
        receiver = subprocess.Popen(
            py("pgreceive.py", "--emulator-host", server.host, "--subscription", sub, "--warmup", "0",
               "--duration", "3600", "--batch-size", "4000"),
            env=build.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)  # the receiver's stream is open and keeping up
        if receiver.poll() is not None:
            raise RuntimeError(f"the receiver exited with {receiver.returncode}")
        st0, cpu0, t0 = server.stats(), cpu_by_process(), time.time()
        m = measure(spark_e2e.reader(spark, "ceiling", "", "", PAYLOAD, ""), scratch, warmup, window)
        st1, cpu1, dt = server.stats(), cpu_by_process(), time.time() - t0
        if receiver.poll() is not None:
            raise RuntimeError(f"the receiver exited with {receiver.returncode} while the ceiling ran")
        cores = {k: (cpu1[k] - cpu0.get(k, 0.0)) / dt for k in cpu1}
        return {"ceiling": m["rows_per_sec"], "received": (st1["delivered"] - st0["delivered"]) / dt,
                "cores": cores}
    finally:
        if receiver is not None and receiver.poll() is None:
            receiver.terminate()
            try:
                receiver.wait(timeout=15)
            except subprocess.TimeoutExpired:
                receiver.kill()
                receiver.wait(timeout=15)
        server.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fraction", type=float, default=0.8, help="R as a fraction of the ceiling alone")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=6.0)
    ap.add_argument("--window", type=float, default=10.0)
    ap.add_argument("--lib", help="libpubsubgo.so to use instead of building one from the tree")
    a = ap.parse_args()

    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="pubsub-go-under-load-")
    rows: list[dict] = []
    try:
        print("JVM warm-up (ceiling source)", file=sys.stderr)
        measure(spark_e2e.reader(spark, "ceiling", "", "", PAYLOAD, ""), scratch, warmup=2, window=10)
        for r in range(a.rounds):
            alone = measure(spark_e2e.reader(spark, "ceiling", "", "", PAYLOAD, ""), scratch,
                            a.warmup, a.window)["rows_per_sec"]
            rate = int(a.fraction * alone)
            u = under_load(spark, build, rate, scratch, a.warmup, a.window)
            rows.append({"alone": alone, "rate": rate, **u})
            busy = ", ".join(f"{k} {v:.2f}" for k, v in sorted(u["cores"].items(), key=lambda kv: -kv[1])
                             if v >= 0.05)
            print(f"round {r + 1}/{a.rounds}: ceiling alone {alone:,.0f} rows/s; ingesting at up to "
                  f"{rate:,} msg/s: ceiling {u['ceiling']:,.0f} rows/s ({u['ceiling'] / alone:.2f}x alone), "
                  f"received {u['received']:,.0f} msg/s; cores: {busy}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    both = [min(x["ceiling"], x["received"]) / x["alone"] for x in rows]
    print("\nBoth at once, the slower of the two as a fraction of the ceiling alone, per round: "
          + ", ".join(f"{b:.2f}" for b in both) + f" (median {statistics.median(both):.2f}; "
          f"target {a.fraction:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
