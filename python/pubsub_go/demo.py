"""The main job: embedded emulator -> publish sample messages -> read them
back as Arrow batches through the Go data plane (and, optionally, through
spark.readStream.format("pubsub-go")) -> print a summary."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc

from .client import Emulator, Publisher, Subscriber, admin

PROJECT = "pubsub-go-demo"
TOPIC = f"projects/{PROJECT}/topics/demo"
SUB = f"projects/{PROJECT}/subscriptions/demo"


def _sample(n: int, start: int) -> pa.RecordBatch:
    ids = range(start, start + n)
    return pa.record_batch({
        "payload": pa.array([json.dumps({"n": i, "sensor": f"s{i % 7}"}).encode() for i in ids], pa.binary()),
        "attributes": pa.array([[("source", "demo"), ("parity", "even" if i % 2 == 0 else "odd")] for i in ids],
                               pa.map_(pa.string(), pa.string())),
    })


def run(messages: int = 4_000, spark: bool = True) -> int:
    t0 = time.monotonic()
    with Emulator() as emu:
        print(f"[1/4] embedded emulator on {emu.host_port}", flush=True)
        admin("create_topic", emulator_host=emu.host_port, topic=TOPIC)
        admin("create_subscription", emulator_host=emu.host_port, topic=TOPIC, subscription=SUB,
              ack_deadline_seconds=60)
        with Publisher(topic=TOPIC, emulator_host=emu.host_port) as pub:
            for start in range(0, messages, 1000):
                pub.publish(_sample(min(1000, messages - start), start))
            res = pub.flush(timeout_ms=120_000)
        print(f"[2/4] published {res['published']} messages ({res['bytes']} bytes)", flush=True)

        batches = []
        t_read = time.monotonic()
        # pstest hands each stream one message per 10 ms tick: use several streams.
        with Subscriber(subscription=SUB, emulator_host=emu.host_port, streams=8,
                        max_outstanding_messages=5000) as sub:
            rows, deadline = 0, time.monotonic() + 120
            half = messages // 2 if spark else messages
            while rows < half and time.monotonic() < deadline:
                b, acks = sub.next_batch(max_rows=min(1000, half - rows), wait_ms=500)
                if b.num_rows:
                    batches.append(b)
                    rows += b.num_rows
                    sub.ack(acks)
                    print(f"      read {rows}/{half} rows", end="\r", flush=True)
        elapsed = time.monotonic() - t_read
        table = pa.Table.from_batches(batches) if batches else None
        print(f"\n[3/4] read {rows} messages back as {len(batches)} Arrow batches in {elapsed:.2f}s "
              f"({rows / max(elapsed, 1e-9):,.0f} msg/s)", flush=True)
        if table is not None:
            print(f"      schema: {table.schema}".replace("\n", "\n      "))
            print(f"      payload bytes: {pc.sum(pc.binary_length(table['payload'])).as_py()}, "
                  f"publish_time range: {pc.min(table['publish_time'])} .. {pc.max(table['publish_time'])}")
        spark_rows = 0
        if spark:
            spark_rows = _spark_read(emu.host_port, messages - rows)
        total = rows + spark_rows
        ok = total == messages
        print(f"[4/4] summary: published {messages}, read {rows} via Subscriber + {spark_rows} via Spark = "
              f"{total} -> {'OK' if ok else 'MISMATCH'} in {time.monotonic() - t0:.1f}s", flush=True)
        return 0 if ok else 1


def _spark_read(host_port: str, want: int) -> int:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("pubsub-go-demo")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            df = (spark.readStream.format("pubsub-go").option("subscriptionId", SUB)
                  .option("emulatorHost", host_port).option("numPartitions", "2")
                  .option("streamsPerPartition", "4").option("maxWaitTimeMs", "500")
                  .option("batchLogLocation", f"{tmp}/log")
                  .option("drainBacklog", "true").load())  # read the backlog, then stop: every Spark 4
            q = (df.selectExpr("CAST(payload AS STRING) AS payload", "attributes['parity'] AS parity")
                 .writeStream.format("memory").queryName("demo")
                 .option("checkpointLocation", f"{tmp}/ckpt").start())
            import pubsub_go

            pubsub_go.drain(q, timeout_s=300)
            got = spark.sql("SELECT parity, count(*) AS n FROM demo GROUP BY parity ORDER BY parity").collect()
            n = sum(r.n for r in got)
            print(f"      Spark readStream (drainBacklog) got {n}/{want} rows: "
                  + ", ".join(f"{r.parity}={r.n}" for r in got), flush=True)
            return n
    finally:
        spark.stop()
