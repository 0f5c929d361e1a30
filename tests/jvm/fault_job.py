"""A streaming query through the JVM front end for tests/test_jvm_faults.py,
run in a fresh interpreter of the PySpark under test (the test kills it, or
one of its executors, with SIGKILL). argv[1] is a JSON spec. It reports each
micro-batch on stdout as it ends ("batch <id> rows=<n>"), runs until the
spec's stop file exists, then stops the query, reads the file sink's output
(through Spark, so only committed files count) and prints a RESULT line."""

from __future__ import annotations

import json
import os
import sys
import time

SPEC = json.loads(sys.argv[1])


def session():
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(SPEC.get("master", "local[2]")).appName("pubsub-go-jvm-fault")
         .config("spark.jars", SPEC["jar"]).config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2"))
    for k, v in SPEC.get("conf", {}).items():
        b = b.config(k, v)
    return b.getOrCreate()


def progress(q) -> list[dict]:
    return [json.loads(p.json) if hasattr(p, "json") else p for p in q.recentProgress]


def main() -> None:
    spark = session()
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", SPEC["subscription"])
         .option("emulatorHost", SPEC["emulator"]))
    for k, v in SPEC.get("options", {}).items():
        r = r.option(k, str(v))
    w = (r.load().selectExpr("message_id", "delivery_attempt").writeStream.format("parquet")
         .option("path", SPEC["out"]).option("checkpointLocation", SPEC["checkpoint"]))
    if SPEC.get("available_now"):
        w = w.trigger(availableNow=True)
    else:
        w = w.trigger(processingTime=f"{SPEC.get('trigger_ms', 1000)} milliseconds")
    q = w.start()
    print("started", flush=True)
    seen: set[int] = set()
    deadline = time.time() + SPEC.get("timeout", 600)
    all_progress: dict[int, dict] = {}
    while time.time() < deadline:
        for p in progress(q):
            all_progress[p["batchId"]] = p
            if p["batchId"] not in seen:
                seen.add(p["batchId"])
                print(f"batch {p['batchId']} rows={p['numInputRows']}", flush=True)
        if q.exception() is not None or not q.isActive or os.path.exists(SPEC["stop_file"]):
            break
        time.sleep(0.1)
    for p in progress(q):
        all_progress[p["batchId"]] = p
    error = str(q.exception()) if q.exception() is not None else None
    q.stop()
    rows = spark.read.parquet(SPEC["out"]).select("message_id", "delivery_attempt").collect()
    result = {"spark": spark.version, "error": error, "ids": [x.message_id for x in rows],
              "redelivered_rows": sum(1 for x in rows if (x.delivery_attempt or 0) >= 2),
              "progress": [all_progress[b] for b in sorted(all_progress)]}
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()
    print("clean exit", flush=True)


if __name__ == "__main__":
    main()
