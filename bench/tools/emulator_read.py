"""Reading a backlog from Google's official Pub/Sub emulator, where users
develop and test: `pubsub-go` with default options against the plain
Python Data Source a PySpark user writes today (bench/peers/plain_source.py:
synchronous Pulls of 1,000 with google-cloud-pubsub), side by side in one
run, alternating, on the same backlog size.

    python bench/tools/emulator_read.py [--messages 30000] [--size 1000] [--rounds 3]
        [--trigger streaming|availableNow|both]

`--trigger streaming` (the default) runs pubsub-go as a streaming query
with the default trigger (`processingTime="0 seconds"`, micro-batches back
to back), stopped once it has every message, as the plain source is;
`availableNow` runs it under `Trigger.AvailableNow`, which ends on its own
after its quiet period; `both` runs the two each round.

Reports per round and as medians [min-max]: seconds until every message
reached the sink (a noop-like foreachBatch that counts rows), msg/s, each
pubsub-go contender's ratio to the plain source of the same round, and the
micro-batch sizes.
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


def run_available_now(spark, host: str, sub: str, n: int, tmp: str) -> dict:
    counted = {"rows": 0, "t_all": None}
    t0 = time.monotonic()

    def count(df, _batch_id) -> None:
        counted["rows"] += df.count()
        if counted["rows"] >= n and counted["t_all"] is None:
            counted["t_all"] = time.monotonic() - t0

    q = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
         .option("batchLogLocation", f"{tmp}/log").options(**EXTRA_OPTIONS).load()
         .writeStream.foreachBatch(count).trigger(availableNow=True).option("checkpointLocation", f"{tmp}/ck").start())
    if not q.awaitTermination(600):
        q.stop()
        raise RuntimeError("pubsub-go did not finish within 600 s")
    if q.exception():
        raise RuntimeError(f"pubsub-go failed: {q.exception()}")
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    return {"rows": counted["rows"], "seconds": counted["t_all"] or float("nan"),
            "end_seconds": time.monotonic() - t0, "batches": sizes}


# pubsub-go options besides the defaults (--option k=v), to try one lever.
EXTRA_OPTIONS: dict[str, str] = {}


def run_streaming(spark, host: str, sub: str, n: int, tmp: str) -> dict:
    df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
          .option("batchLogLocation", f"{tmp}/log").options(**EXTRA_OPTIONS).load())
    return _until_all(df, n, tmp, "pubsub-go streaming")


def run_plain(spark, host: str, sub: str, n: int, tmp: str) -> dict:
    df = spark.readStream.format("bench-plain-pubsub").option("subscription", sub).option("emulatorHost", host).load()
    return _until_all(df, n, tmp, "plain source")


def _until_all(df, n: int, tmp: str, name: str) -> dict:
    """Runs df under the default trigger into a counting foreachBatch until
    it has n rows, then stops it (neither source ends on its own)."""
    counted: dict = {"rows": 0, "sizes": []}
    t0 = time.monotonic()

    def count(bdf, _batch_id) -> None:
        c = bdf.count()
        counted["rows"] += c
        if c:
            counted["sizes"].append(c)

    q = (df.writeStream.foreachBatch(count).trigger(processingTime="0 seconds")
         .option("checkpointLocation", f"{tmp}/ck").start())
    deadline = time.monotonic() + 600
    while counted["rows"] < n and time.monotonic() < deadline and q.isActive:
        time.sleep(0.05)
    took = time.monotonic() - t0
    q.stop()
    sizes = counted["sizes"]
    if counted["rows"] < n:
        raise RuntimeError(f"{name} read {counted['rows']} of {n}: {q.exception()}")
    return {"rows": counted["rows"], "seconds": took, "batches": sizes}


CONTENDERS = {"pubsub-go streaming": run_streaming, "pubsub-go availableNow": run_available_now,
              "plain": run_plain}
WARMUP_MESSAGES = 2_000
TRIGGERS = {"streaming": ["pubsub-go streaming"], "availableNow": ["pubsub-go availableNow"],
            "both": ["pubsub-go streaming", "pubsub-go availableNow"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=30_000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trigger", choices=sorted(TRIGGERS), default="streaming",
                    help="how pubsub-go's query runs (default: streaming, the default trigger)")
    ap.add_argument("--option", action="append", default=[], metavar="K=V",
                    help="a pubsub-go source option besides the defaults (repeatable)")
    args = ap.parse_args()
    EXTRA_OPTIONS.update(kv.split("=", 1) for kv in args.option)

    import pubsub_go
    from emulators import OfficialEmulator
    from google_peer import GoogleClients
    from peers.plain_source import PlainPubSubSource
    from sparkutil import spark_session

    # Spark's Python workers import the plain source by module path.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")]))
    names = [*TRIGGERS[args.trigger], "plain"]
    emu = OfficialEmulator()
    try:
        google = GoogleClients(emu.host_port)
        spark = spark_session(master="local[2]", app="emulator-read")
        pubsub_go.register(spark)
        spark.dataSource.register(PlainPubSubSource)
        results: dict[str, list[dict]] = {name: [] for name in names}
        for name in names:  # not counted: the first query of a session pays for starting Python workers
            topic, sub = google.topic(ack_deadline=10)
            publish(google, topic, WARMUP_MESSAGES, args.size)
            with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
                CONTENDERS[name](spark, emu.host_port, sub, WARMUP_MESSAGES, tmp)
        for rnd in range(args.rounds):
            for name in (names if rnd % 2 == 0 else names[::-1]):  # alternate who goes first
                topic, sub = google.topic(ack_deadline=10)
                publish(google, topic, args.messages, args.size)
                with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
                    r = CONTENDERS[name](spark, emu.host_port, sub, args.messages, tmp)
                results[name].append(r)
                extra = (f", ended after {r['end_seconds']:.1f} s" if "end_seconds" in r else "")
                print(f"round {rnd + 1} {name:22s}: {r['rows']} rows in {r['seconds']:.1f} s "
                      f"({r['rows'] / r['seconds']:,.0f} msg/s){extra}; micro-batches: {len(r['batches'])}, "
                      f"median {statistics.median(r['batches']):,.0f} rows", flush=True)

        def med(xs: list[float]) -> str:
            return f"{statistics.median(xs):,.2f} [{min(xs):,.2f}-{max(xs):,.2f}]"

        print(f"\n{args.messages} messages of {args.size} B on Google's emulator, {args.rounds} rounds, "
              f"{os.cpu_count()} cores; msg/s to read all, median [min-max]")
        for name, rs in results.items():
            print(f"  {name:22s}: {med([r['rows'] / r['seconds'] for r in rs])} msg/s; "
                  f"micro-batches {med([len(r['batches']) for r in rs])}, "
                  f"median rows {med([statistics.median(r['batches']) for r in rs])}")
        for name in names[:-1]:
            ratios = [p["seconds"] / g["seconds"] for g, p in zip(results[name], results["plain"], strict=True)]
            print(f"  {name} / plain throughput: {med(ratios)} (per round: "
                  f"{', '.join(f'{x:.2f}' for x in ratios)})")
        return 0
    finally:
        emu.stop()


if __name__ == "__main__":
    sys.exit(main())
