"""Spark source `pubsub-go` against Google's official emulator, with
google-cloud-pubsub publishing."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import pubsub_go
from sparkutil import StandaloneCluster, run_until, spark_session, stop_spark

pytestmark = pytest.mark.spark
JOBS = Path(__file__).resolve().parent / "jobs"


@pytest.fixture()
def spark():
    # getOrCreate: shared across tests unless a test needs its own context.
    s = spark_session(master="local[2,4]")  # 4 task attempts: retries are part of the contract
    pubsub_go.register(s)
    return s


def read_stream(spark, emulator, sub, tmp_path, **opts):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub)
         .option("emulatorHost", emulator.host_port).option("batchLogLocation", str(tmp_path / "batchlog"))
         .option("numPartitions", "2").option("maxWaitTimeMs", "300"))
    for k, v in opts.items():
        r = r.option(k, str(v))
    return r.load()


def test_pass_through_count_and_sum_then_drained(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=10)
    google.publish(topic, [str(i).encode() for i in range(1000)])
    df = read_stream(spark, emulator, sub, tmp_path)
    q = (df.selectExpr("message_id", "CAST(CAST(payload AS STRING) AS INT) AS n").writeStream
         .format("memory").queryName("passthrough")
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM passthrough").first().c >= 1000)
        time.sleep(2)
        q.processAllAvailable()
        row = spark.sql("SELECT count(*) c, count(DISTINCT message_id) d, sum(n) s FROM passthrough").first()
        assert (row.c, row.d, row.s) == (1000, 1000, sum(range(1000)))
        progress = q.lastProgress["sources"][0]
        latest = progress["latestOffset"]
        latest = json.loads(latest) if isinstance(latest, str) else latest
        assert latest is not None and latest["acked"] >= 1 and "pendingAcks" in latest, progress
    finally:
        q.stop()
    time.sleep(12)  # past the 10 s ack deadline: nothing may come back
    assert google.pull_all(sub, max_wait=3) == []


def test_at_most_once_tasks_ack_and_tasks_take_max_records_each(spark, google, emulator, tmp_path):
    """ackOnCommit=false: each task acks what it recorded, so the driver,
    which acks at commit by default (acked >= 1 in the test above), acks
    nothing and has nothing pending. maxRecordsPerPartition=100 with 2
    tasks: no micro-batch over 200 rows, where the default (200,000) lets
    the first take the whole backlog."""
    topic, sub = google.topic(ack_deadline=10)
    google.publish(topic, [str(i).encode() for i in range(600)])
    df = read_stream(spark, emulator, sub, tmp_path, ackOnCommit="false", maxRecordsPerPartition=100)
    q = (df.select("message_id").writeStream.format("memory").queryName("atmostonce")
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM atmostonce").first().c >= 600)
        q.processAllAvailable()
        assert spark.sql("SELECT count(*) c, count(DISTINCT message_id) d FROM atmostonce").first() == (600, 600)
        progress = q.recentProgress
        sizes = [p["numInputRows"] for p in progress]
        latest = progress[-1]["sources"][0]["latestOffset"]
        latest = json.loads(latest) if isinstance(latest, str) else latest
    finally:
        q.stop()
    assert sum(sizes) == 600 and max(sizes) <= 200, sizes
    assert (latest["acked"], latest["pendingAcks"]) == (0, 0), latest


def test_admission_control_caps_rows_per_batch(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"x%d" % i for i in range(350)])
    sizes: list[int] = []
    df = read_stream(spark, emulator, sub, tmp_path, maxRecordsPerTrigger=100)
    q = (df.writeStream.foreachBatch(lambda b, i: sizes.append(b.count()))
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        run_until(q, lambda: sum(sizes) >= 350)
    finally:
        q.stop()
    assert sum(sizes) == 350 and max(sizes) <= 100, sizes


def test_available_now_stops_on_its_own(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    google.publish(topic, [b"a%d" % i for i in range(200)])
    df = read_stream(spark, emulator, sub, tmp_path)
    q = (df.writeStream.format("memory").queryName("availnow").trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    assert q.awaitTermination(180), "AvailableNow query did not stop on its own"
    assert q.exception() is None
    assert spark.sql("SELECT count(DISTINCT message_id) d, count(*) c FROM availnow").first() == (200, 200)


def test_watermark_drops_late_rows_in_spark_not_in_the_source(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    t = datetime.now(timezone.utc).replace(microsecond=0)

    def event(ts: datetime) -> bytes:
        return json.dumps({"event_time": ts.strftime("%Y-%m-%d %H:%M:%S")}).encode()

    df = read_stream(spark, emulator, sub, tmp_path)
    counts = (df.selectExpr("CAST(get_json_object(CAST(payload AS STRING), '$.event_time') AS TIMESTAMP) AS et")
              .withWatermark("et", "30 minutes").groupBy("et").count())
    q = (counts.writeStream.format("memory").queryName("wm").outputMode("update")
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        google.publish(topic, [event(t), event(t - timedelta(minutes=10))])
        run_until(q, lambda: spark.sql("SELECT count(*) c FROM wm").first().c >= 2)
        q.processAllAvailable()  # an extra batch moves the watermark to T-30m
        google.publish(topic, [event(t - timedelta(hours=1))])
        seen = []

        def late_row_reached_spark() -> bool:
            for p in q.recentProgress:
                seen.append(p)
            return any(p["stateOperators"] and p["stateOperators"][0]["numRowsDroppedByWatermark"] > 0
                       for p in q.recentProgress)

        run_until(q, late_row_reached_spark)
        input_rows = sum(p["numInputRows"] for p in q.recentProgress)
        assert input_rows >= 3, "the source must hand every message to Spark, late or not"
        times = {r.et.replace(tzinfo=None) for r in spark.sql("SELECT et FROM wm").collect()}
        assert (t - timedelta(hours=1)).replace(tzinfo=None) not in times
    finally:
        q.stop()


def test_foreach_batch_evaluated_twice_sees_one_version(spark, google, emulator, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    ids = set(google.publish(topic, [b"f%d" % i for i in range(300)]))
    out = tmp_path / "out"
    mismatches: list[tuple[int, int, int]] = []

    def twice(batch, batch_id):
        n = batch.count()
        batch.write.mode("append").parquet(str(out))
        again = batch.count()
        if n != again:
            mismatches.append((batch_id, n, again))

    df = read_stream(spark, emulator, sub, tmp_path)
    q = df.select("message_id").writeStream.foreachBatch(twice).option(
        "checkpointLocation", str(tmp_path / "ckpt")).start()
    try:
        run_until(q, lambda: out.exists() and spark.read.parquet(str(out)).count() >= 300)
    finally:
        q.stop()
    got = [r.message_id for r in spark.read.parquet(str(out)).collect()]
    assert not mismatches, f"a batch changed between evaluations: {mismatches}"
    assert sorted(got) == sorted(ids)


@pytest.mark.parametrize("reuse", ["true", "false"])
def test_python_worker_killed_mid_task_loses_nothing(google, emulator, tmp_path, reuse):
    """A UDF SIGKILLs its Python worker on the first attempt of the first
    task; Spark retries; the batch replays from the log: exactly once."""
    stop_spark()  # worker reuse is a SparkContext setting
    s = spark_session(master="local[2,4]", app=f"kill-worker-{reuse}", spark__python__worker__reuse=reuse)
    try:
        pubsub_go.register(s)
        topic, sub = google.topic(ack_deadline=30)
        ids = set(google.publish(topic, [b"k%d" % i for i in range(200)]))
        marker = tmp_path / "killed"
        from pyspark.sql.functions import udf

        @udf("string")
        def maybe_die(mid):
            from pyspark import TaskContext

            if not marker.exists() and TaskContext.get().attemptNumber() == 0:
                marker.write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)
            return mid

        df = read_stream(s, emulator, sub, tmp_path)
        q = (df.select(maybe_die("message_id").alias("message_id")).writeStream.format("memory")
             .queryName(f"killed_{reuse}").option("checkpointLocation", str(tmp_path / "ckpt")).start())
        try:
            run_until(q, lambda: s.sql(f"SELECT count(*) c FROM killed_{reuse}").first().c >= 200)
            q.processAllAvailable()
        finally:
            q.stop()
        assert marker.exists(), "the worker was never killed: the test did not test anything"
        got = [r.message_id for r in s.sql(f"SELECT message_id FROM killed_{reuse}").collect()]
        assert sorted(got) == sorted(ids)
    finally:
        s.stop()


def test_auto_registration_needs_no_register_call(emulator, tmp_path):
    """PySpark registers pyspark_pubsub_go.DefaultSource by itself."""
    tests_dir = str(Path(__file__).resolve().parent)
    code = (
        f"import sys; sys.path.insert(0, {tests_dir!r})\n"
        "from sparkutil import spark_session\n"
        "s = spark_session(app='autoreg')\n"
        "df = s.readStream.format('pubsub-go').option('subscriptionId', 'projects/p/subscriptions/s')"
        f".option('emulatorHost', {emulator.host_port!r}).load()\n"
        "print('COLUMNS', ','.join(df.columns))\n"
        "s.stop()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "COLUMNS message_id,publish_time,attributes,payload,ordering_key,delivery_attempt" in out.stdout, (
        out.stdout[-2000:] + out.stderr[-3000:])


# A kill needs the next trigger at least this far off: the job's listener
# line reaches the test within milliseconds, and the kill is immediate.
KILL_SLACK_MS = 500


def test_hard_stop_of_the_whole_driver_is_exactly_once(google, emulator, tmp_path):
    """SIGKILL the driver (its process group: the JVM and the driver's
    Python; Spark's Python workers exit once the JVM is gone) several
    times mid-stream, each time just after a micro-batch ended and well
    before the next trigger (before the next batch acks the last and plans
    its own; see the job's docstring for why not during a task on Google's
    emulator; a CI run whose kills did not wait for such a gap missed 225
    messages); restart from the
    checkpoint; parquet output has every message exactly once and the
    subscription is drained."""
    topic, sub = google.topic(ack_deadline=20)
    n = 1500
    ids = set(google.publish(topic, [b"h%d" % i for i in range(n)]))
    out, ckpt, blog = tmp_path / "out", tmp_path / "ckpt", tmp_path / "batchlog"
    # A 4 s trigger: the gap a kill needs after a batch (KILL_SLACK_MS) is
    # there on a loaded machine too, where a batch takes longer than 2 s.
    args = [sys.executable, str(JOBS / "source_to_parquet.py"), emulator.host_port, sub, str(out), str(ckpt),
            str(blog), "--trigger-seconds", "4"]
    kills = []  # how each kill went, for a failure's message
    landed = []  # (run, rows the runs had reported when it landed) of each kill that landed where meant
    read = 0  # rows the runs reported, all runs so far
    for kill in range(3):
        p = subprocess.Popen([*args, "600"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        seen_batches = 0
        deadline = time.monotonic() + 180
        for line in p.stdout:  # bounded by the deadline check and the kill below
            if time.monotonic() > deadline:
                kills.append(f"run {kill}: deadline passed, killed anyway")
                break
            m = re.match(r"between batch=(\d+) rows=(\d+) next_trigger_ms=(\d+)", line)
            if not m or m[2] == "0":
                continue
            read += int(m[2])
            seen_batches += 1
            # Only while the next batch is far enough off that none of its
            # tasks can have opened a stream when the kill lands.
            slack_ms = int(m[3]) - time.time() * 1000
            # At the first such gap after a batch with rows: on a loaded
            # machine the gaps come late, and a kill waiting for more batches
            # (1 + kill of them, as before) found the backlog read before the
            # last run, which then timed out and was killed anyway.
            if seen_batches >= 1 and slack_ms > KILL_SLACK_MS:
                kills.append(f"run {kill}: killed after batch {m[1]} ({m[2]} rows), {slack_ms:.0f} ms before the next")
                landed.append((kill, read))
                break
        else:
            kills.append(f"run {kill}: its output ended before a kill (exit code {p.poll()})")
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    # Each kill landed where meant: between micro-batches, far enough before
    # the next, and mid-stream (part of the backlog still unread), so the
    # restart below has a killed run's leftovers to read.
    assert [k for k, _ in landed] == [0, 1, 2], kills
    assert all(r < n for _, r in landed), f"a kill landed after all {n} messages were read: {landed}; {kills}"
    p = subprocess.run([*args, "60"], capture_output=True, text=True, timeout=400)
    assert "clean exit" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
    s = spark_session(app="hard-stop-check")
    try:
        got = [r.message_id for r in s.read.parquet(str(out)).collect()]
    finally:
        s.stop()
    dupes = len(got) - len(set(got))
    assert dupes == 0, f"{dupes} duplicates in the file sink output"
    assert set(got) == ids, f"missing {len(ids - set(got))} messages; {kills}"
    time.sleep(21)
    assert google.pull_all(sub, max_wait=3) == []


def test_bad_option_fails_before_any_data_moves(spark, emulator, tmp_path):
    with pytest.raises(Exception, match="numPartitions"):
        (spark.readStream.format("pubsub-go").option("subscriptionId", "projects/p/subscriptions/s")
         .option("emulatorHost", emulator.host_port).option("numPartitions", "lots").load())
    with pytest.raises(Exception, match="subscriptionId"):
        spark.readStream.format("pubsub-go").option("emulatorHost", emulator.host_port).load()
    with pytest.raises(Exception, match="(?i)maxWaitTimme.*did you mean maxWaitTimeMs"):
        (spark.readStream.format("pubsub-go").option("subscriptionId", "projects/p/subscriptions/s")
         .option("maxWaitTimme", "5").load())


@pytest.mark.timeout(240)
def test_unknown_subscription_fails_the_query_with_not_found(spark, emulator, tmp_path):
    df = read_stream(spark, emulator, "projects/pubsub-go-test/subscriptions/nope", tmp_path)
    q = df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ckpt")).start()
    with pytest.raises(Exception, match="NOT_FOUND"):
        q.awaitTermination(180)
    assert not q.isActive


@pytest.mark.cluster
def test_standalone_cluster_with_two_workers(google, emulator, tmp_path):
    stop_spark()
    cluster = StandaloneCluster(workers=2, cores=1)
    try:
        s = spark_session(master=cluster.url, app="cluster", spark__executor__memory="1g",
                          spark__cores__max="2")
        try:
            pubsub_go.register(s)
            topic, sub = google.topic(ack_deadline=30)
            ids = set(google.publish(topic, [str(i).encode() for i in range(600)]))
            df = read_stream(s, emulator, sub, tmp_path, numPartitions=4)
            q = df.select("message_id").writeStream.format("memory").queryName("cluster").option(
                "checkpointLocation", str(tmp_path / "ckpt")).start()
            try:
                run_until(q, lambda: s.sql("SELECT count(*) c FROM cluster").first().c >= 600, timeout=240)
            finally:
                q.stop()
            executors = s.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
            assert executors == 2
            got = [r.message_id for r in s.sql("SELECT message_id FROM cluster").collect()]
            assert sorted(got) == sorted(ids)
        finally:
            s.stop()
    finally:
        cluster.stop()
