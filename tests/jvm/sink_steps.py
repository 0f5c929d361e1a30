"""The JVM sink's steps of tests/jvm/job.py's application (issue 54): rows
routed by a topic column, and schemaFrom=topic. Each step returns what the test checks: "ok" or
the error the user sees. No pubsub_go import (the 3.5 venv has none)."""

from __future__ import annotations


def sink_write(spark, step: dict) -> str:
    """A batch append of step["exprs"] over spark.range(n) in step["partitions"]
    partitions (default: Spark's) with step["options"]; "ok" or the error."""
    df = spark.range(0, step["n"], 1, step.get("partitions")).selectExpr(*step["exprs"])
    try:
        df.write.format("pubsub-go").mode("append").options(**step["options"]).save()
        return "ok"
    except Exception as e:  # the error a user sees
        return str(e)


def pooled_writes(spark, step: dict) -> dict:
    """Two appends with the same options (publisherIdleMs from them), then how many idle publishers this
    JVM (local mode: driver and executor) keeps for the topic."""
    first = sink_write(spark, {**step, "exprs": [e.replace("{start}", "0") for e in step["exprs"]]})
    second = sink_write(spark, {**step, "exprs": [e.replace("{start}", str(step["n"])) for e in step["exprs"]]})
    pool = spark.sparkContext._jvm.io.pubsubgo.spark.sink.PublisherPool
    return {"writes": [first, second], "idle": pool.idleFor(step["options"]["topicId"])}


STEPS = {"sink_write": sink_write, "pooled_writes": pooled_writes}
