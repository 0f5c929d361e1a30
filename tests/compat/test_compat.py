"""The compatibility suite: the same wheel on every supported PySpark
(4.0 to 4.3), against Google's official emulator, with Google's client as
the outside peer. One Spark session and one emulator for the suite
(conftest.py). What differs by version is decided by feature detection
(pubsub_go/spark/compat.py) and documented in docs/platforms.md."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pubsub_go

pytestmark = [pytest.mark.compat, pytest.mark.spark]
JOBS = Path(__file__).resolve().parents[1] / "jobs"


def spark_version() -> tuple[int, int]:
    import pyspark

    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


def publish_n(google, topic: str, n: int, start: int = 0, size: int = 100) -> None:
    for lo in range(start, start + n, 5000):
        google.publish(topic, [(b"%08d" % i).ljust(size, b".") for i in range(lo, min(lo + 5000, start + n))])


def source(spark, emulator, sub: str, tmp_path: Path, **opts):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
         .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "batchlog")))
    for k, v in opts.items():
        r = r.option(k, str(v))
    return r.load()


def to_parquet(df, out: str, ckpt: str, **trigger):
    w = (df.selectExpr("message_id", "CAST(payload AS STRING) AS payload").writeStream.format("parquet")
         .option("path", out).option("checkpointLocation", ckpt))
    if trigger:
        w = w.trigger(**trigger)
    return w.start()


def counts(spark, out: str) -> tuple[int, int]:
    row = spark.read.parquet(out).selectExpr("count(*) c", "count(DISTINCT message_id) d").first()
    return row.c, row.d


def payload_ids(spark, out: str) -> set[str]:
    return {r.p for r in spark.read.parquet(out).selectExpr("substring(payload, 1, 8) AS p").collect()}


def as_dict(progress) -> dict:
    """A progress report as Spark's JSON says it (PySpark 4.0+ wraps it in objects)."""
    return json.loads(progress.json) if hasattr(progress, "json") else progress


def test_features_follow_what_pyspark_offers():
    """Feature detection, checked against what each release is known to ship."""
    from pubsub_go.spark.compat import spark_features

    f = spark_features()
    v = spark_version()
    assert f["admissionControl"] == (v >= (4, 2)), f
    assert f["triggerAvailableNow"] == (v >= (4, 2)), f
    assert f["streamArrowWriter"] == (v >= (4, 1)), f


def test_drain_job_twice_on_one_checkpoint_is_exactly_once(spark, google, emulator, tmp_path):
    """The documented "read the backlog, then stop" job (drainBacklog +
    pubsub_go.drain): 20,000, then 10,000 published since, exactly once."""
    topic, sub = google.topic(ack_deadline=10)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")
    publish_n(google, topic, 20_000)
    for expected in (20_000, 30_000):
        t0 = time.monotonic()
        q = to_parquet(source(spark, emulator, sub, tmp_path, drainBacklog="true"), out, ckpt)
        pubsub_go.drain(q, timeout_s=600)
        got = counts(spark, out)
        print(f"drain run: {got} in {time.monotonic() - t0:.1f}s", flush=True)
        assert got == (expected, expected), f"read {got}, expected {expected} exactly once; {q.lastProgress}"
        if expected == 20_000:
            publish_n(google, topic, 10_000, start=20_000)
    assert payload_ids(spark, out) == {f"{i:08d}" for i in range(30_000)}


def test_available_now_trigger(spark, google, emulator, tmp_path):
    """Trigger.AvailableNow alone: on 4.2+ the whole backlog, twice on one
    checkpoint. On 4.0/4.1 Spark cannot hand a Python source the trigger and
    runs a single micro-batch (SPARK-45178): the query ends having read part
    of the backlog at most, which is why docs/source.md documents drainBacklog."""
    topic, sub = google.topic(ack_deadline=10)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")
    publish_n(google, topic, 3_000)
    opts = {"maxRecordsPerTrigger": 1_000}
    q = to_parquet(source(spark, emulator, sub, tmp_path, **opts), out, ckpt, availableNow=True)
    assert q.awaitTermination(300), "the AvailableNow query did not end"
    assert q.exception() is None, q.exception()
    batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
    if spark_version() >= (4, 2):
        assert counts(spark, out) == (3_000, 3_000)
        assert len(batches) >= 3, [p["numInputRows"] for p in q.recentProgress]
        publish_n(google, topic, 1_000, start=3_000)
        q = to_parquet(source(spark, emulator, sub, tmp_path, **opts), out, ckpt, availableNow=True)
        assert q.awaitTermination(300) and q.exception() is None
        assert counts(spark, out) == (4_000, 4_000)
    else:
        # One micro-batch (at most the source's own cap), then the query ends
        # reporting success with most of the backlog unread.
        assert len(batches) == 1, [p["numInputRows"] for p in q.recentProgress]
        n, distinct = counts(spark, out)
        assert 0 < n == distinct <= 1_000, (n, distinct)


def test_streaming_read_stopped_and_restarted_is_exactly_once(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=10)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")
    publish_n(google, topic, 4_000)
    # A 2 s trigger leaves gaps between micro-batches, and the stop comes in
    # one: Google's emulator keeps leasing to a stream cut by a kill (a task
    # still pulling when its query stops can be SIGKILLed; docs/source.md),
    # which would hide messages from every later run. What this checks is
    # the restart on the checkpoint, on every PySpark.
    q = to_parquet(source(spark, emulator, sub, tmp_path, maxRecordsPerTrigger=1_000), out, ckpt,
                   processingTime="2 seconds")
    deadline = time.monotonic() + 120
    while sum(p["numInputRows"] for p in q.recentProgress) < 2_000 or q.status["isTriggerActive"]:
        assert q.exception() is None, q.exception()
        assert time.monotonic() < deadline, q.recentProgress
        time.sleep(0.05)
    q.stop()
    first = counts(spark, out)
    assert 0 < first[0] == first[1] < 4_000 + 1, first
    publish_n(google, topic, 2_000, start=4_000)
    q = to_parquet(source(spark, emulator, sub, tmp_path, maxRecordsPerTrigger=1_000, drainBacklog="true"), out, ckpt)
    pubsub_go.drain(q, timeout_s=300)
    assert counts(spark, out) == (6_000, 6_000)
    assert payload_ids(spark, out) == {f"{i:08d}" for i in range(6_000)}


def test_admission_control_caps_every_micro_batch(spark, google, emulator, tmp_path):
    """maxRecordsPerTrigger caps each micro-batch on every version (on 4.0/4.1
    the source enforces it itself: Spark passes it no limit)."""
    topic, sub = google.topic(ack_deadline=10)
    publish_n(google, topic, 2_000)
    q = to_parquet(source(spark, emulator, sub, tmp_path, maxRecordsPerTrigger=400, drainBacklog="true"),
                   str(tmp_path / "out"), str(tmp_path / "ckpt"))
    pubsub_go.drain(q, timeout_s=300)
    rows = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert max(rows) <= 400 and sum(rows) == 2_000, rows
    assert len(rows) >= 5, rows
    # The connector's figures reach the progress on every version.
    last = as_dict([p for p in q.recentProgress if p["numInputRows"]][-1])["sources"][0]
    shown = last["latestOffset"] if spark_version() >= (4, 2) else last["endOffset"]
    shown = json.loads(shown) if isinstance(shown, str) else shown
    figures = shown if spark_version() >= (4, 2) else shown["progress"]
    assert figures["rows"] >= 1_600, figures  # the batches finished before the last one was planned


def test_the_stricter_of_two_trigger_limits_bounds_every_micro_batch(spark, google, emulator, tmp_path):
    """maxRecordsPerTrigger and maxBytesPerTrigger together: the bytes cap is
    the stricter here (400 rows of 100 B payloads are over 40 KB with their
    metadata), so no micro-batch reaches 400 rows. On 4.0/4.1 the source
    applies both caps itself (Spark passes it no limit)."""
    topic, sub = google.topic(ack_deadline=10)
    publish_n(google, topic, 1_000)
    q = to_parquet(source(spark, emulator, sub, tmp_path, maxRecordsPerTrigger=400, maxBytesPerTrigger=40_000,
                          batchSize=50, drainBacklog="true"), str(tmp_path / "out"), str(tmp_path / "ckpt"))
    pubsub_go.drain(q, timeout_s=300)
    rows = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(rows) == 1_000 and max(rows) < 400, rows


def test_schema_mode_json(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=10)
    google.publish(topic, [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(500)])
    df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
          .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "batchlog"))
          .option("format", "json").option("drainBacklog", "true")
          .schema("id BIGINT, name STRING, message_id STRING").load())
    out = str(tmp_path / "out")
    q = (df.writeStream.format("parquet").option("path", out)
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    pubsub_go.drain(q, timeout_s=300)
    rows = spark.read.parquet(out).collect()
    assert sorted((r.id, r.name) for r in rows) == [(i, f"n{i}") for i in range(500)]


def test_streaming_and_batch_writes(spark, google, tmp_path, emulator):
    """The sink: a streaming write (Arrow writer on 4.1+, the row-based one on
    4.0) and a batch write, every row arriving at Google's client."""
    topic, sub = google.topic(ack_deadline=60)
    data = spark.createDataFrame([(f"b{i}", {"k": str(i)}) for i in range(1_500)],
                                 "payload STRING, attributes MAP<STRING, STRING>")
    data.write.format("pubsub-go").option("topicId", topic).option("emulatorHost", emulator.host_port) \
        .mode("append").save()
    src = tmp_path / "in"
    spark.range(2_500).selectExpr("CONCAT('s', CAST(id AS STRING)) AS payload").write.parquet(str(src))
    stream = spark.readStream.schema("payload STRING").parquet(str(src))
    q = (stream.writeStream.format("pubsub-go").option("topicId", topic).option("emulatorHost", emulator.host_port)
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    q.processAllAvailable()
    q.stop()
    assert q.exception() is None
    got = google.pull_all(sub, max_wait=10)
    payloads = sorted(m.message.data.decode() for m in got)
    assert payloads == sorted([f"b{i}" for i in range(1_500)] + [f"s{i}" for i in range(2_500)])
    attrs = {m.message.data.decode(): dict(m.message.attributes) for m in got if m.message.data.startswith(b"b")}
    assert attrs["b7"] == {"k": "7"}


def test_register_and_format_under_spark_connect(connect, google, emulator, tmp_path):
    """Spark Connect client: pubsub_go.register works, a streaming read into
    parquet (drain job), a batch write and a streaming write each move every
    message/row."""
    pubsub_go.register(connect)  # no SparkContext here: must not need one
    topic, sub = google.topic(ack_deadline=10)
    publish_n(google, topic, 3_000)
    out = str(tmp_path / "out")
    q = to_parquet(source(connect, emulator, sub, tmp_path, drainBacklog="true"), out, str(tmp_path / "ckpt"))
    pubsub_go.drain(q, timeout_s=300)
    assert counts(connect, out) == (3_000, 3_000)

    wtopic, wsub = google.topic(ack_deadline=60)
    connect.range(1_000).selectExpr("CONCAT('w', CAST(id AS STRING)) AS payload").write.format("pubsub-go") \
        .option("topicId", wtopic).option("emulatorHost", emulator.host_port).mode("append").save()
    src = str(tmp_path / "in")
    connect.range(1_000).selectExpr("CONCAT('s', CAST(id AS STRING)) AS payload").write.parquet(src)
    sq = (connect.readStream.schema("payload STRING").parquet(src).writeStream.format("pubsub-go")
          .option("topicId", wtopic).option("emulatorHost", emulator.host_port)
          .option("checkpointLocation", str(tmp_path / "wckpt")).start())
    sq.processAllAvailable()
    sq.stop()
    payloads = sorted(m.message.data.decode() for m in google.pull_all(wsub, max_wait=10))
    assert payloads == sorted([f"w{i}" for i in range(1_000)] + [f"s{i}" for i in range(1_000)])


@pytest.mark.compat_oldest
def test_driver_killed_between_micro_batches_then_restarted_is_exactly_once(spark, google, emulator, tmp_path):
    """SIGKILL the whole driver (tests/jobs/source_to_parquet.py, its own
    process group) right after a micro-batch, well before the next trigger;
    restart on the checkpoint: every message exactly once in the file sink.
    On 4.0/4.1 the restarted run learns nothing of its start from Spark and
    begins a new generation of batch numbers (read/driver/stream.py)."""
    topic, sub = google.topic(ack_deadline=20)
    ids = set(google.publish(topic, [b"k%d" % i for i in range(900)]))
    out, ckpt, blog = tmp_path / "out", tmp_path / "ckpt", tmp_path / "batchlog"
    # A 5 s trigger leaves a gap after each micro-batch even on a loaded machine.
    args = [sys.executable, str(JOBS / "source_to_parquet.py"), emulator.host_port, sub, str(out), str(ckpt),
            str(blog), "--trigger-seconds", "5"]
    p = subprocess.Popen([*args, "600"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    killed = ""
    seen: list[str] = []
    deadline = time.monotonic() + 180
    for line in p.stdout:  # bounded by the deadline check and the kill below
        seen.append(line)
        m = re.match(r"between batch=(\d+) rows=(\d+) next_trigger_ms=(\d+)", line)
        if time.monotonic() > deadline:
            break
        if m and m[2] != "0" and int(m[3]) - time.time() * 1000 > 500:
            killed = f"after batch {m[1]} ({m[2]} rows)"
            break
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    assert killed, "no micro-batch with rows ended within 180 s:\n" + "".join(seen)[-4000:]
    r = subprocess.run([*args, "45"], capture_output=True, text=True, timeout=400)
    assert "clean exit" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    got = [row.message_id for row in spark.read.parquet(str(out)).collect()]
    assert len(got) == len(set(got)), f"{len(got) - len(set(got))} duplicates; killed {killed}"
    assert set(got) == ids, f"missing {len(ids - set(got))}; killed {killed}"
