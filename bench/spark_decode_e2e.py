"""Spark end to end at 1 KB JSON messages with five typed columns, from
bench/loadserver (--payload-json) into the noop sink, local[2]: the
source's raw mode, schema mode (`format=json`: decoded natively in the Go
data plane), and raw mode + Spark's from_json. Rows/s from the queries'
progress (bench/harness/sparkrun.measure). Run by bench/decode_bench.py, or
alone:

    python bench/spark_decode_e2e.py [--warmup 6] [--window 10]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from harness.procs import Build, LoadServer, create  # noqa: E402
from harness.spark_e2e import TUNED  # noqa: E402
from harness.sparkrun import measure, session  # noqa: E402

DDL = "id BIGINT, name STRING, score DOUBLE, ok BOOLEAN, at TIMESTAMP"  # = jsonPayload in bench/loadserver
MODES = ("raw", "schema mode", "raw + from_json")


def reader(spark, mode: str, host: str, sub: str, batchlog: str):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
         .option("numPartitions", "2").option("batchLogLocation", batchlog))
    for k, v in TUNED.items():
        r = r.option(k, v)
    if mode == "schema mode":
        return r.option("format", "json").schema(DDL).load()
    df = r.load()
    if mode == "raw + from_json":
        return df.selectExpr(f"from_json(CAST(payload AS STRING), '{DDL}') AS r").select("r.*")
    return df


def run(warmup: float = 6.0, window: float = 10.0, size: int = 1024) -> dict[str, float]:
    """Rows/s per mode."""
    build = Build.make()
    spark = session(build)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    scratch = tempfile.mkdtemp(prefix="decode-e2e-")
    server = LoadServer(build, size, 2, "--payload-json")
    out = {}
    try:
        subs = {m: f"projects/bench/subscriptions/decode-{i}" for i, m in enumerate(MODES)}
        create(build, server, "projects/bench/topics/decode", list(subs.values()))
        for mode in MODES:
            batchlog = tempfile.mkdtemp(prefix="batchlog-", dir=scratch)
            m = measure(reader(spark, mode, server.host, subs[mode], batchlog), scratch, warmup, window)
            out[mode] = m["rows_per_sec"]
            print(f"{mode}: {m['rows_per_sec']:,.0f} rows/s over {m['batches']} micro-batches", flush=True)
    finally:
        server.stop()
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(build.dir, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warmup", type=float, default=6.0)
    ap.add_argument("--window", type=float, default=10.0)
    args = ap.parse_args()
    res = run(args.warmup, args.window)
    raw, schema, fj = (res[m] for m in MODES)
    print(f"schema mode / raw = {schema / raw:.2f}, schema mode / (raw + from_json) = {schema / fj:.2f}")


if __name__ == "__main__":
    main()
