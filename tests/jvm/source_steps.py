"""The JVM source's scenarios of the options it took over from the Python
source (issue 52): steps of tests/jvm/job.py's one Spark application per
version, checked by tests/test_jvm_front_end.py. Each step gets the
session, the job's spec (with the step's own subscription, output and
checkpoint) and the step; it returns what the test checks."""

from __future__ import annotations

import json
from collections.abc import Callable


def key_parts(secret: str) -> dict:
    """Databricks' service-credential options, the key holding secret (which must show nowhere)."""
    return {"clientEmail": "reader@pubsub-go-test.iam.gserviceaccount.com", "clientId": "1234", "privateKeyId": "k1",
            "privateKey": f"-----BEGIN PRIVATE KEY-----\\n{secret}\\n-----END PRIVATE KEY-----\\n"}

STEPS: dict[str, Callable] = {}


def step(fn: Callable) -> Callable:
    STEPS[fn.__name__] = fn
    return fn


def _progress(q) -> list[dict]:
    return [json.loads(p.json) if hasattr(p, "json") else p for p in q.recentProgress]


def _reader(spark, options: dict):
    r = spark.readStream.format("pubsub-go")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load()


def _available_now(spark, spec: dict, options: dict, secret: str = "\0") -> dict:
    """One AvailableNow run into parquet: its progress, the ids read, and
    where the secret showed (the plan, the progress, the error)."""
    df = _reader(spark, options)
    q = (df.writeStream.format("parquet").option("path", spec["out"])
         .option("checkpointLocation", spec["checkpoint"]).trigger(availableNow=True).start())
    try:
        q.awaitTermination(spec.get("timeout", 600))
    except Exception:  # the query's failure, recorded below for the test
        pass
    err = str(q.exception()) if q.exception() is not None else None
    shown = {"plan": df._jdf.queryExecution().toString(), "explain": q._jsq.explainInternal(True),
             "progress": json.dumps(_progress(q)), "error": err or ""}
    out = {"progress": _progress(q), "error": err, "leaks": [k for k, v in shown.items() if secret in v]}
    if err is None:  # a run that read nothing may have left no files to read
        read = sum(p["numInputRows"] for p in out["progress"])
        rows = spark.read.parquet(spec["out"]).select("message_id").collect() if read else []
        out["ids"] = [r.message_id for r in rows]
    return out


def _start_error(spark, spec: dict, options: dict) -> str:
    try:
        q = (_reader(spark, options).writeStream.format("noop")
             .option("checkpointLocation", spec["checkpoint"] + "-e").trigger(availableNow=True).start())
        q.awaitTermination(120)
        return str(q.exception()) if q.exception() is not None else "no error"
    except Exception as e:  # analysis errors come from start() itself
        return str(e)


@step
def aliases(spark, spec: dict, step: dict) -> dict:
    """Other connectors' names only: Pub/Sub Lite's subscription path,
    Databricks' partitions and service credential, Kafka's trigger limit."""
    project, _, sub = step["subscription"].split("/")[1:]
    opts = {"pubsublite.subscription": f"projects/{project}/locations/us-central1-a/subscriptions/{sub}",
            "emulatorHost": spec["emulator"], "numFetchPartitions": 3, "maxOffsetsPerTrigger": 600,
            **key_parts(step["secret"])}
    return _available_now(spark, spec, opts, step["secret"])


@step
def bad_credentials(spark, spec: dict, step: dict) -> list[str]:
    """Bad inline credentials (each holding the step's secret): the query's error for each."""
    secret = step["secret"]
    base = {"subscriptionId": spec["subscription"], "emulatorHost": spec["emulator"]}
    sets = [{"credentialsJson": '{"type": "service_account", "private_key": "' + secret},
            {"credentialsJson": '{"type": "service_account", "private_key": "' + secret + '"}'},
            {"gcp.credentials.key": secret + "!"},
            {**key_parts(secret), "privateKey": secret}]
    return [_start_error(spark, spec, {**base, **s}) for s in sets]


@step
def attribute_columns(spark, spec: dict, step: dict) -> dict:
    """attributeColumns and timestampAttribute: each row's derived columns, and the run's figures."""
    opts = {"subscriptionId": spec["subscription"], "emulatorHost": spec["emulator"], **step["options"]}
    got = _available_now(spark, spec, opts)
    if got["error"] is None:
        rows = (spark.read.parquet(spec["out"])
                .selectExpr("CAST(payload AS STRING) AS p", "region", "absent", "unix_micros(et) AS et").collect())
        got["rows"] = sorted([r.p, r.region, r.absent, r.et] for r in rows)
        got["columns"] = spark.read.parquet(spec["out"]).columns
    return got


def _count(spark, spec: dict, opts: dict, out: str, checkpoint: str) -> dict:
    got = _available_now(spark, {**spec, "out": out, "checkpoint": checkpoint}, opts)
    if got["error"] is None:
        got["payloads"] = sorted(bytes(r.payload).decode() for r in
                                 spark.read.parquet(out).select("payload").collect()) if got["ids"] else []
    return {k: got[k] for k in ("error", "payloads") if k in got}


@step
def lifecycle(spark, spec: dict, step: dict) -> dict:
    """topicId creates the subscription (its filter, retention, dead letters);
    messages published after; a snapshot of it; the rows read from it, again
    from the snapshot, again from a time (acked messages retained), and not
    again on a restart; a second one ordered and exactly once; a third deleted
    on stop."""
    base = {"emulatorHost": spec["emulator"], "topicId": step["topic"]}
    create = {**base, "subscriptionId": step["subscription"], "filter": 'attributes.keep = "yes"',
              "messageRetentionSeconds": "2h", "subscriptionDeadLetterTopicId": step["dlq"], "maxDeliveryAttempts": 7,
              "retainAckedMessages": "true"}  # not ordered: the emulator cannot seek an ordered one to a time
    tmp = step["tmp"]
    out: dict = {"runs": {}}
    out["runs"]["created"] = _count(spark, spec, create, tmp + "/l1-out", tmp + "/l1-ck")
    before_ms = int(__import__("time").time() * 1000)
    (spark.range(20).selectExpr("CAST(concat('f', id) AS BINARY) AS payload",
                                "map('keep', IF(id % 2 = 0, 'yes', 'no')) AS attributes")
     .write.format("pubsub-go").mode("append").option("topicId", step["topic"])
     .option("emulatorHost", spec["emulator"]).save())
    spark.sparkContext._jvm.io.pubsubgo.spark.bridge.Library.admin(json.dumps(
        {"op": "create_snapshot", "snapshot": step["snapshot"], "subscription": step["subscription"],
         "emulator_host": spec["emulator"]}))
    out["runs"]["read"] = _count(spark, spec, create, tmp + "/l1-out", tmp + "/l1-ck")
    again = {"subscriptionId": step["subscription"], "emulatorHost": spec["emulator"]}
    out["runs"]["snapshot"] = _count(spark, spec, {**again, "startingSnapshot": step["snapshot"]},
                                     tmp + "/l2-out", tmp + "/l2-ck")
    at = {**again, "startingTimestamp": str(before_ms)}
    out["runs"]["timestamp"] = _count(spark, spec, at, tmp + "/l3-out", tmp + "/l3-ck")
    out["runs"]["restart"] = _count(spark, spec, at, tmp + "/l3b-out", tmp + "/l3-ck")
    out["runs"]["ordered"] = _count(spark, spec, {**base, "subscriptionId": step["subscription2"],
                                                  "enableExactlyOnceDelivery": "true", "enableMessageOrdering": "true"},
                                    tmp + "/l4-out", tmp + "/l4-ck")
    out["runs"]["deleted"] = _count(spark, spec, {**base, "subscriptionId": step["subscription3"],
                                                  "deleteSubscriptionOnStreamStop": "true"},
                                    tmp + "/l5-out", tmp + "/l5-ck")
    return out


def _streaming(spark, spec: dict, options: dict, stop_at: int) -> dict:
    """A processing-time query into parquet, stopped once it read stop_at rows: its progress and error."""
    import time

    q = (_reader(spark, options).writeStream.format("parquet").option("path", spec["out"])
         .option("checkpointLocation", spec["checkpoint"]).trigger(processingTime="1 second").start())
    deadline = time.time() + spec.get("timeout", 600)
    while time.time() < deadline and q.exception() is None:
        if sum(p["numInputRows"] for p in _progress(q)) >= stop_at:
            break
        time.sleep(0.5)
    q.stop()
    err = str(q.exception()) if q.exception() is not None else None
    return {"progress": _progress(q), "error": err}


@step
def byte_limits(spark, spec: dict, step: dict) -> dict:
    """maxBytesPerTrigger and maxBytesPerPartition under AvailableNow (with a
    minimum it ignores, reading the whole backlog without waiting)."""
    opts = {"subscriptionId": step["subscription"], "emulatorHost": spec["emulator"], **step["options"]}
    return _available_now(spark, {**spec, "out": step["out"], "checkpoint": step["checkpoint"]}, opts)


@step
def min_records(spark, spec: dict, step: dict) -> dict:
    """minRecordsPerTrigger with maxTriggerDelay: a streaming query whose first
    micro-batch waits out the delay for a minimum that never comes, and one
    whose minimum is there; the minimums' bad option sets."""
    out: dict = {}
    for name in ("short", "met"):
        run = step[name]
        opts = {"subscriptionId": run["subscription"], "emulatorHost": spec["emulator"], **run["options"]}
        out[name] = _streaming(spark, {**spec, "out": run["out"], "checkpoint": run["checkpoint"]}, opts,
                               run["stop_at"])
    base = {"subscriptionId": step["short"]["subscription"], "emulatorHost": spec["emulator"]}
    out["errors"] = [_start_error(spark, {**spec, "checkpoint": step["short"]["checkpoint"] + "-bad"}, {**base, **o})
                     for o in step["bad"]]
    return out


@step
def ack_on_commit(spark, spec: dict, step: dict) -> dict:
    """A streaming query whose every micro-batch fails after its tasks ended
    (foreachBatch counts the rows, then raises), so Spark never commits one:
    with and without ackOnCommit. The test then sees what was acked."""
    out: dict = {}
    for name in ("at_commit", "at_task"):
        run = step[name]
        opts = {"subscriptionId": run["subscription"], "emulatorHost": spec["emulator"], **run["options"]}
        counted: list[int] = []

        def fail(df, _batch_id, counted=counted) -> None:
            counted.append(df.count())
            raise RuntimeError("pubsub-go test: the batch fails after its tasks ended")

        q = (_reader(spark, opts).writeStream.foreachBatch(fail)
             .option("checkpointLocation", run["checkpoint"]).trigger(availableNow=True).start())
        try:
            q.awaitTermination(spec.get("timeout", 600))
        except Exception:  # the failure the step asked for, checked below
            pass
        out[name] = {"counted": counted, "error": str(q.exception()) if q.exception() is not None else None}
    return out


@step
def subscriber_idle(spark, spec: dict, step: dict) -> dict:
    """A streaming query with subscriberIdleMs=0 and a small trigger limit: several micro-batches."""
    opts = {"subscriptionId": step["subscription"], "emulatorHost": spec["emulator"], **step["options"]}
    return _streaming(spark, {**spec, "out": step["out"], "checkpoint": step["checkpoint"]}, opts, step["stop_at"])


@step
def catch_up(spark, spec: dict, step: dict) -> dict:
    """catchUpStreamsPerPartition: a streaming query that starts behind a
    backlog (published before the application started, so older than the
    library's catch-up lag), then, once it has read it, gets live traffic:
    step["live"] rows written through the sink every second until a
    micro-batch of live rows reports streamsPerPartition streams again (or a
    minute went by). Its progress, and the rows written live."""
    import time

    opts = {"subscriptionId": step["subscription"], "emulatorHost": spec["emulator"], **step["options"]}
    q = (_reader(spark, opts).writeStream.format("parquet").option("path", step["out"])
         .option("checkpointLocation", step["checkpoint"]).trigger(processingTime="1 second").start())
    written = 0
    err = None
    try:
        deadline = time.time() + 300
        while time.time() < deadline and q.exception() is None:
            if sum(p["numInputRows"] for p in _progress(q)) >= step["backlog"]:
                break
            time.sleep(0.5)
        seen = len(_progress(q))
        deadline = time.time() + 60
        while time.time() < deadline and q.exception() is None:
            (spark.range(written, written + step["live"]).selectExpr("CAST(concat('live', id) AS BINARY) AS payload")
             .write.format("pubsub-go").mode("append").option("topicId", step["topic"])
             .option("emulatorHost", spec["emulator"]).save())
            written += step["live"]
            later = [p for p in _progress(q)[seen:] if p["numInputRows"] > 0]
            if any(int(p["sources"][0]["metrics"]["streams"]) == step["streams"] for p in later):
                break
            time.sleep(1)
        # the live rows written last: read before the stop
        total = step["backlog"] + written
        deadline = time.time() + 60
        while time.time() < deadline and q.exception() is None:
            if sum(p["numInputRows"] for p in _progress(q)) >= total:
                break
            time.sleep(0.5)
    finally:
        q.stop()
        err = str(q.exception()) if q.exception() is not None else None
    rows = spark.read.parquet(step["out"]).select("message_id", "payload").collect() if err is None else []
    return {"progress": _progress(q), "error": err, "written": written, "ids": [r.message_id for r in rows],
            "live_payloads": sorted(bytes(r.payload).decode() for r in rows if bytes(r.payload).startswith(b"live"))}


@step
def id_attribute(spark, spec: dict, step: dict) -> dict:
    """idAttribute: one AvailableNow run from the step's checkpoint (the
    test publishes copies between runs); the run's progress and, after it,
    every row of the output with its id attribute."""
    opts = {"subscriptionId": step["subscription"], "emulatorHost": spec["emulator"], **step["options"]}
    if "schema" in step:  # schema mode: the JSON payloads decoded into the step's columns
        return _schema_mode_run(spark, step, opts)
    got = _available_now(spark, {**spec, "out": step["out"], "checkpoint": step["checkpoint"]}, opts)
    if got["error"] is None:
        rows = (spark.read.parquet(step["out"]).selectExpr("attributes['uid'] AS uid", "CAST(payload AS STRING) AS p")
                .collect())
        got["rows"] = sorted([r.uid, r.p] for r in rows)
    return got


def _schema_mode_run(spark, step: dict, opts: dict) -> dict:
    r = spark.readStream.format("pubsub-go").schema(step["schema"])
    for k, v in opts.items():
        r = r.option(k, str(v))
    q = (r.load().writeStream.format("parquet").option("path", step["out"])
         .option("checkpointLocation", step["checkpoint"]).trigger(availableNow=True).start())
    try:
        q.awaitTermination(600)
    except Exception:  # the query's failure, recorded below for the test
        pass
    got = {"progress": _progress(q), "error": str(q.exception()) if q.exception() is not None else None}
    if got["error"] is None:
        rows = spark.read.parquet(step["out"]).selectExpr("attributes['uid'] AS uid", "n").collect()
        got["rows"] = sorted([r.uid, r.n] for r in rows)
    return got
