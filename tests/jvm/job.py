"""A Spark job through the JVM front end, run by tests/test_jvm_source.py in
a fresh interpreter of the PySpark under test (3.5.7 in its own venv, or the
suite's 4.3), since a JVM with the jar resolves format("pubsub-go") to it.
Needs no pubsub_go import: argv[1] is a JSON spec, the result a JSON line."""

from __future__ import annotations

import json
import sys
import threading
import time

import sink_steps  # the sink's steps (this directory is the script's, so on sys.path)
import source_steps  # the source's option scenarios (issue 52)

SPEC = json.loads(sys.argv[1])


def session():
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(SPEC.get("master", "local[2]")).appName("pubsub-go-jvm-test")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2"))
    if SPEC["jar"]:  # else the jar comes from "conf" alone (tests/test_platform_recipes.py)
        b = b.config("spark.jars", SPEC["jar"])
    for k, v in SPEC.get("conf", {}).items():
        b = b.config(k, v)
    return b.getOrCreate()


def reader(spark, extra=None):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", SPEC["subscription"])
         .option("emulatorHost", SPEC["emulator"]))
    for k, v in {**SPEC.get("options", {}), **(extra or {})}.items():
        r = r.option(k, str(v))
    return r.load()


def progress(q) -> list[dict]:
    """The query's progress reports (dicts on PySpark 3.5, objects on 4.x)."""
    return [json.loads(p.json) if hasattr(p, "json") else p for p in q.recentProgress]


def available_now(spark, extra=None):
    """One AvailableNow run into the parquet sink; its progress reports."""
    q = (reader(spark, extra).writeStream.format("parquet").option("path", SPEC["out"])
         .option("checkpointLocation", SPEC["checkpoint"]).trigger(availableNow=True).start())
    q.awaitTermination(SPEC.get("timeout", 600))
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return progress(q)


def streaming(spark, stop_at: int, extra=None):
    """A processing-time query stopped once the sink holds stop_at rows."""
    q = (reader(spark, extra).writeStream.format("parquet").option("path", SPEC["out"])
         .option("checkpointLocation", SPEC["checkpoint"]).trigger(processingTime="1 second").start())
    deadline = time.time() + SPEC.get("timeout", 600)
    while time.time() < deadline:
        done = sum(p["numInputRows"] for p in progress(q))
        if done >= stop_at or q.exception() is not None:
            break
        time.sleep(0.5)
    q.stop()
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return progress(q)


def write(spark, step: dict) -> str:
    """Batch or streaming append of step["exprs"] over spark.range(n); "ok" or the error."""
    df = spark.range(step["n"]).selectExpr(*step["exprs"])
    try:
        if step.get("streaming"):
            src = SPEC["out"] + "-rows"
            df.write.mode("overwrite").parquet(src)
            q = (spark.readStream.schema(df.schema).parquet(src).writeStream.format("pubsub-go")
                 .options(**step["options"]).option("checkpointLocation", SPEC["checkpoint"] + "-w")
                 .trigger(availableNow=True).start())
            q.awaitTermination(300)
            return "ok" if q.exception() is None else str(q.exception())
        df.write.format("pubsub-go").mode("append").options(**step["options"]).save()
        return "ok"
    except Exception as e:  # the error a user sees
        return str(e)


def through_connect(step: dict) -> dict:
    """Reads the subscription into parquet and writes n rows to a topic, as a
    Connect client in any language would: only the server has the jar."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    c = ConnectSession.builder.remote(f"sc://127.0.0.1:{step['port']}").getOrCreate()
    try:
        q = (c.readStream.format("pubsub-go").option("subscriptionId", SPEC["subscription"])
             .option("emulatorHost", SPEC["emulator"]).load()
             .writeStream.format("parquet").option("path", SPEC["out"] + "-connect")
             .option("checkpointLocation", SPEC["checkpoint"] + "-connect").trigger(availableNow=True).start())
        q.awaitTermination(300)
        description = q.lastProgress["sources"][0]["description"]
        read = int(c.read.parquet(SPEC["out"] + "-connect").count())  # numpy's int64 on 3.5
        (c.range(step["n"]).selectExpr("CONCAT('c', CAST(id AS STRING)) AS payload").write.format("pubsub-go")
         .mode("append").option("topicId", step["topic"]).option("emulatorHost", SPEC["emulator"]).save())
        return {"read": read, "description": description}
    finally:
        c.stop()


def start_error(spark, options: dict) -> str:
    try:
        q = (reader(spark, options).writeStream.format("noop").option("checkpointLocation", SPEC["checkpoint"] + "-e")
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        return str(q.exception()) if q.exception() is not None else "no error"
    except Exception as e:  # analysis errors come from start() itself
        return str(e)


def out_ids(spark):
    rows = spark.read.parquet(SPEC["out"]).select("message_id", "payload").collect()
    return [r.message_id for r in rows], sorted({bytes(r.payload).decode() for r in rows})[:3]


def collect(jvm, stop: threading.Event) -> None:
    while not stop.is_set():
        jvm.System.gc()
        time.sleep(0.05)


def main() -> None:
    spark = session()
    result: dict = {"spark": spark.version}
    steps = SPEC["steps"]
    for step in steps:
        kind = step["kind"]
        # A step may name its own subscription, output and checkpoint (several
        # scenarios in one JVM); its results go under its "key".
        saved = dict(SPEC)
        SPEC.update({k: step[k] for k in ("subscription", "out", "checkpoint") if k in step})
        runs = result.setdefault(step.get("key", "runs"), []) if kind in ("available_now", "streaming") else None
        if kind == "available_now":
            runs.append(available_now(spark, step.get("options")))
        elif kind == "streaming":
            runs.append(streaming(spark, step["stop_at"], step.get("options")))
        elif kind == "wait_file":  # the test publishes more, then lets the job go on
            while not __import__("os").path.exists(step["path"]):
                time.sleep(0.2)
        elif kind == "ids":
            result[step.get("key", "ids")], result["sample"] = out_ids(spark)
        elif kind == "write":  # rows made by SQL, to a topic
            result.setdefault("writes", []).append(write(spark, step))
        elif kind == "connect":  # a Spark Connect client of this JVM's Connect server, reading and writing
            result["connect"] = through_connect(step)
        elif kind == "errors":  # each bad option set's error, as the query reports it
            result["errors"] = [start_error(spark, o) for o in step["option_sets"]]
        elif kind == "panic":
            jvm = spark.sparkContext._jvm
            try:
                jvm.io.pubsubgo.spark.bridge.Library.debugPanic()
                result["panic"] = "no exception"
            except Exception as e:  # py4j's Py4JJavaError carries the Java exception
                result["panic"] = str(e)[:2000]
        elif kind in sink_steps.STEPS:  # results under the step's key, in order
            result.setdefault(step["key"], []).append(sink_steps.STEPS[kind](spark, step))
        elif kind in source_steps.STEPS:  # results under the step's key, in order
            result.setdefault(step["key"], []).append(source_steps.STEPS[kind](spark, SPEC, step))
        elif kind == "failing_read":  # an AvailableNow run that must fail: its error
            try:
                available_now(spark, step.get("options"))
                result[step["key"]] = "no exception"
            except Exception as e:
                result[step["key"]] = str(e)[:4000]
        elif kind == "gc":  # the JVM collects without pause while tasks read from C memory
            stop = threading.Event()
            t = threading.Thread(target=collect, args=(spark.sparkContext._jvm, stop), daemon=True)
            t.start()
            result.setdefault("runs", []).append(available_now(spark, step.get("options")))
            stop.set()
            t.join()
        SPEC.clear()
        SPEC.update(saved)
        print(f"job: step {kind} done", file=sys.stderr, flush=True)
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
