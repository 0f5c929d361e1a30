"""Reading a backlog from Google's official Pub/Sub emulator, where users
develop and test: `pubsub-go` with default options against the plain
Python Data Source a PySpark user writes today (bench/peers/plain_source.py:
synchronous Pulls of 1,000 with google-cloud-pubsub), side by side in one
run, alternating, on the same backlog size.

    python bench/tools/emulator_read.py [--messages 30000] [--size 1000] [--rounds 3]

Reports per round and as medians [min-max]: seconds until every message
reached the sink (a noop-like foreachBatch that counts rows), msg/s, the
pubsub-go/plain ratio, and pubsub-go's micro-batch sizes and time to end
(AvailableNow ends on its own after its quiet period; the plain source has
no end, so it is stopped once it has every message).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def publish(google, topic: str, n: int, size: int) -> None:
    for lo in range(0, n, 5000):
        google.publish(topic, [(b"%08d" % i).ljust(size, b".") for i in range(lo, min(lo + 5000, n))])


def run_pubsub_go(spark, host: str, sub: str, n: int, tmp: str) -> dict:
    counted = {"rows": 0, "t_all": None}
    t0 = time.monotonic()

    def count(df, _batch_id) -> None:
        counted["rows"] += df.count()
        if counted["rows"] >= n and counted["t_all"] is None:
            counted["t_all"] = time.monotonic() - t0

    q = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
         .option("batchLogLocation", f"{tmp}/log").load()
         .writeStream.foreachBatch(count).trigger(availableNow=True).option("checkpointLocation", f"{tmp}/ck").start())
    if not q.awaitTermination(600):
        q.stop()
        raise RuntimeError("pubsub-go did not finish within 600 s")
    if q.exception():
        raise RuntimeError(f"pubsub-go failed: {q.exception()}")
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    return {"rows": counted["rows"], "seconds": counted["t_all"] or float("nan"),
            "end_seconds": time.monotonic() - t0, "batches": sizes}


def run_plain(spark, host: str, sub: str, n: int, tmp: str) -> dict:
    counted: dict = {"rows": 0, "sizes": []}
    t0 = time.monotonic()

    def count(df, _batch_id) -> None:
        c = df.count()
        counted["rows"] += c
        if c:
            counted["sizes"].append(c)

    q = (spark.readStream.format("bench-plain-pubsub").option("subscription", sub).option("emulatorHost", host)
         .load().writeStream.foreachBatch(count)
         .option("checkpointLocation", f"{tmp}/ck-plain").start())
    deadline = time.monotonic() + 600
    while counted["rows"] < n and time.monotonic() < deadline and q.isActive:
        time.sleep(0.05)
    took = time.monotonic() - t0
    q.stop()
    sizes = counted["sizes"]
    if counted["rows"] < n:
        raise RuntimeError(f"plain source read {counted['rows']} of {n}")
    return {"rows": counted["rows"], "seconds": took, "batches": sizes}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=30_000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    import pubsub_go
    from emulators import OfficialEmulator
    from google_peer import GoogleClients
    from peers.plain_source import PlainPubSubSource
    from sparkutil import spark_session

    # Spark's Python workers import the plain source by module path.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")]))
    emu = OfficialEmulator()
    try:
        google = GoogleClients(emu.host_port)
        spark = spark_session(master="local[2]", app="emulator-read")
        pubsub_go.register(spark)
        spark.dataSource.register(PlainPubSubSource)
        results: dict[str, list[dict]] = {"pubsub-go": [], "plain": []}
        for rnd in range(args.rounds):
            for name in (("pubsub-go", "plain") if rnd % 2 == 0 else ("plain", "pubsub-go")):
                topic, sub = google.topic(ack_deadline=10)
                publish(google, topic, args.messages, args.size)
                with tempfile.TemporaryDirectory() as tmp:
                    fn = run_pubsub_go if name == "pubsub-go" else run_plain
                    r = fn(spark, emu.host_port, sub, args.messages, tmp)
                results[name].append(r)
                extra = (f", ended after {r['end_seconds']:.1f} s" if "end_seconds" in r else "")
                print(f"round {rnd + 1} {name:9s}: {r['rows']} rows in {r['seconds']:.1f} s "
                      f"({r['rows'] / r['seconds']:,.0f} msg/s){extra}; micro-batches: {len(r['batches'])}, "
                      f"median {statistics.median(r['batches']):,.0f} rows", flush=True)
        ratios = [p["seconds"] / g["seconds"] for g, p in zip(results["pubsub-go"], results["plain"], strict=True)]

        def med(xs: list[float]) -> str:
            return f"{statistics.median(xs):,.1f} [{min(xs):,.1f}-{max(xs):,.1f}]"

        print(f"\n{args.messages} messages of {args.size} B on Google's emulator, {args.rounds} rounds, "
              f"{os.cpu_count()} cores")
        for name, rs in results.items():
            print(f"  {name:9s}: {med([r['rows'] / r['seconds'] for r in rs])} msg/s "
                  f"to read all; micro-batch median rows {med([statistics.median(r['batches']) for r in rs])}")
        print(f"  pubsub-go / plain throughput ratio: {med(ratios)} (per round: "
              f"{', '.join(f'{x:.2f}' for x in ratios)})")
        return 0
    finally:
        emu.stop()


if __name__ == "__main__":
    sys.exit(main())
