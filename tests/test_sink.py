"""The `pubsub-go` sink (df.write / df.writeStream) against Google's
official emulator, with Google's own Python client as the reader.

The first tests need no Spark: option parsing, schema checks and the rule
that building a writer never loads the Go library. The Spark tests share
one local session (module scope)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.write.options import SinkOptions, validate_sink_schema
from pubsub_go.spark.write.writer import (
    PublishCommitMessage,
    PubSubArrowWriter,
    PubSubStreamArrowWriter,
    make_writer,
)

ID_ATTR = "pubsub_go_id"
RAW = StructType([
    StructField("payload", BinaryType()),
    StructField("attributes", MapType(StringType(), StringType())),
    StructField("ordering_key", StringType()),
])


# -- options and schema (no Spark session, no network) -------------------------

def test_options_defaults_and_case_insensitive_keys() -> None:
    o = SinkOptions.parse({"PROJECTID": "p", "TopicId": "t", "emulatorHost": "127.0.0.1:1"})
    assert o.topic == "projects/p/topics/t"
    assert (o.batch_max_messages, o.batch_max_bytes, o.linger_ms) == (1000, 4 << 20, 5)
    assert (o.max_in_flight_bytes, o.publish_timeout_ms) == (128 << 20, 600_000)
    assert o.enable_message_ordering is False and o.id_attribute is None
    o = SinkOptions.parse({"topicid": "projects/q/topics/t2", "enablemessageordering": "TRUE",
                           "batchmaxbytes": "1000000", "idattribute": ID_ATTR, "checkpointLocation": "/x"})
    assert o.topic == "projects/q/topics/t2" and o.enable_message_ordering and o.batch_max_bytes == 1_000_000
    cfg = o.publisher_config("qid-3-1")
    assert (cfg.topic, cfg.id_attribute, cfg.id_prefix) == ("projects/q/topics/t2", ID_ATTR, "qid-3-1")


def test_emulator_host_falls_back_to_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:9999")
    assert SinkOptions.parse({"projectId": "p", "topicId": "t"}).conn.emulator_host == "127.0.0.1:9999"
    assert SinkOptions.parse({"projectId": "p", "topicId": "t", "emulatorHost": "h:1"}).conn.emulator_host == "h:1"
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST")
    assert SinkOptions.parse({"projectId": "p", "topicId": "t"}).conn.emulator_host is None


@pytest.mark.parametrize("options, expected", [
    ({"projectId": "p"}, "option topicId is required"),
    ({"topicId": "t"}, "needs a project id"),
    ({"projectId": "p", "topicId": "projects/q/topics/t"}, "disagrees with topicId"),
    ({"topicId": "projects/p/subscriptions/s"}, "expected projects/PROJECT/topics/ID"),
    ({"topic": "projects/p/topics/t"}, "unknown option(s) ['topic']"),
    ({"topicId": "projects/p/topics/t", "path": "x"}, "takes no path"),
    ({"topicId": "projects/p/topics/t", "batchMaxMessages": "1001"}, "batchMaxMessages=1001 is out of range"),
    ({"topicId": "projects/p/topics/t", "batchMaxMessages": "many"},
     "batchMaxMessages='many' is not an integer"),
    ({"topicId": "projects/p/topics/t", "batchMaxBytes": "10000000"}, "under the 10 MB limit"),
    ({"topicId": "projects/p/topics/t", "lingerMs": "0"}, "lingerMs=0 is out of range"),
    ({"topicId": "projects/p/topics/t", "maxInFlightBytes": "-1"}, "maxInFlightBytes=-1 is out of range"),
    ({"topicId": "projects/p/topics/t", "publishTimeoutMs": "soon"}, "publishTimeoutMs='soon'"),
    ({"topicId": "projects/p/topics/t", "enableMessageOrdering": "maybe"}, "expected true or false"),
    ({"topicId": "projects/p/topics/t", "idAttribute": "googid"}, "reserved"),
    ({"topicId": "projects/p/topics/t", "emulatorHost": "localhost"}, "must be host:port"),
    ({"topicId": "projects/p/topics/t", "credentials": "/nonexistent/key.json"}, "no such file"),
])
def test_bad_options_name_the_option(options: dict[str, str], expected: str) -> None:
    with pytest.raises(OptionError) as e:
        SinkOptions.parse(options)
    assert expected in str(e.value)


def test_schema_accepts_the_raw_columns_in_any_subset() -> None:
    validate_sink_schema(RAW)
    validate_sink_schema(StructType([StructField("payload", StringType())]))
    validate_sink_schema(StructType([StructField("ordering_key", StringType()),
                                     StructField("payload", BinaryType(), nullable=False)]))


@pytest.mark.parametrize("schema, expected", [
    (StructType([StructField("value", LongType())]),
     ["missing column 'payload'", "unexpected column 'value'"]),
    (StructType([StructField("payload", IntegerType())]),
     ["'payload' has type int, expected binary or string"]),
    (StructType([StructField("payload", BinaryType()),
                 StructField("attributes", MapType(StringType(), LongType()))]),
     ["'attributes' has type map<string,bigint>"]),
    (StructType([StructField("Payload", BinaryType())]), ["must be spelled 'payload'"]),
    (StructType([StructField("payload", BinaryType()), StructField("payload", StringType())]),
     ["duplicate column 'payload'"]),
])
def test_schema_errors_list_problems_and_what_is_accepted(schema: StructType, expected: list[str]) -> None:
    with pytest.raises(OptionError) as e:
        validate_sink_schema(schema)
    for text in [*expected, "accepted columns: payload (binary or string, required)"]:
        assert text in str(e.value)


def test_make_writer_checks_mode_and_ordering() -> None:
    opts = {"topicId": "projects/p/topics/t", "enableMessageOrdering": "true"}
    assert isinstance(make_writer(opts, RAW, False, streaming=False), PubSubArrowWriter)
    assert isinstance(make_writer(opts, RAW, False, streaming=True), PubSubStreamArrowWriter)
    with pytest.raises(OptionError, match=r"mode\('append'\)"):
        make_writer(opts, RAW, True, streaming=False)
    with pytest.raises(OptionError, match=r"outputMode\('append'\)"):  # complete mode
        make_writer(opts, RAW, True, streaming=True)
    with pytest.raises(OptionError, match="enableMessageOrdering is false"):
        make_writer({"topicId": "projects/p/topics/t"}, RAW, False, streaming=True)


def test_building_and_pickling_a_writer_does_not_load_go() -> None:
    """The driver builds writers; the Go runtime must only load in tasks
    (PySpark forks its workers). Run in a clean interpreter."""
    code = (
        "import pickle\n"
        "from pyspark.sql.types import StructType, StructField, BinaryType\n"
        "from pubsub_go import _native\n"
        "from pubsub_go.spark.write.writer import make_writer\n"
        "s = StructType([StructField('payload', BinaryType())])\n"
        "for streaming in (False, True):\n"
        "    w = make_writer({'topicId': 'projects/p/topics/t', 'idAttribute': 'id'}, s, False, streaming)\n"
        "    pickle.loads(pickle.dumps(w))\n"
        "assert not _native.is_loaded(), 'Go was loaded on the driver'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_commit_message_round_trips_through_pickle() -> None:
    m = PublishCommitMessage(partition_id=1, messages=3, bytes=30, retries=0, id_prefix="q-0-1")
    assert pickle.loads(pickle.dumps(m)) == m


# -- the task-side write path, without Spark -----------------------------------

def test_write_reports_what_the_server_acknowledged(google) -> None:
    """write() outside Spark (no TaskContext: partition 0): the commit
    message counts exactly the messages and bytes the server holds."""
    import pyarrow as pa

    topic, sub = google.topic()
    opts = {"emulatorHost": google.host_port, "topicId": topic, "idAttribute": ID_ATTR}
    writer = make_writer(opts, StructType([StructField("payload", StringType())]), False, streaming=False)
    batches = [pa.record_batch({"payload": [str(i) for i in range(j, j + 50)]}) for j in (0, 50)]
    msg = writer.write(iter([*batches, pa.record_batch({"payload": pa.array([], pa.string())})]))

    got = pull_until(google, sub, lambda ms: len(ms) >= 100, timeout=30)
    assert (msg.partition_id, msg.messages, msg.retries) == (0, 100, 0)
    def size(m) -> int:
        return len(m.message.data) + sum(len(k) + len(v) for k, v in m.message.attributes.items())

    assert msg.bytes == sum(size(m) for m in got)
    assert msg.id_prefix == f"{writer.write_id}-0-0"
    ids = sorted(m.message.attributes[ID_ATTR] for m in got)
    assert ids == sorted(f"{msg.id_prefix}-{i}" for i in range(100))


def test_bad_row_error_says_where_the_row_is(google) -> None:
    import pyarrow as pa

    from pubsub_go.errors import InvalidArgumentError

    topic, _ = google.topic()
    writer = make_writer({"emulatorHost": google.host_port, "topicId": topic},
                         StructType([StructField("payload", BinaryType())]), False, streaming=False)
    good = pa.record_batch({"payload": pa.array([b"a"] * 10, pa.binary())})
    bad = pa.record_batch({"payload": pa.array([b"b", None], pa.binary())})
    with pytest.raises(InvalidArgumentError) as e:
        writer.write(iter([good, bad]))
    assert "row 1: payload is null" in str(e.value) and "starts at row 10 of this task" in str(e.value)
    assert topic in str(e.value)


def test_driver_commit_and_abort_log_totals_and_at_least_once(caplog: pytest.LogCaptureFixture) -> None:
    w = make_writer({"topicId": "projects/p/topics/t"}, StructType(RAW.fields[:1]),
                    False, streaming=True)
    msgs = [PublishCommitMessage(0, 10, 100, 1), None, PublishCommitMessage(1, 5, 50, 0)]
    with caplog.at_level("INFO", logger="pubsub_go.sink"):
        w.commit(msgs, 7)
        w.abort(msgs, 8)
    commit, abort = caplog.records[-2:]
    assert "micro-batch 7" in commit.getMessage()
    assert "15 messages, 150 bytes, 1 retries, 2 tasks" in commit.getMessage()
    assert abort.levelname == "WARNING" and "at least once" in abort.getMessage()


# -- Spark ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def spark() -> Iterator:
    from pyspark.sql import SparkSession

    import pubsub_go

    session = (
        SparkSession.builder.master("local[2]")
        .appName("pubsub-go-sink-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .getOrCreate()
    )
    pubsub_go.register(session)
    try:
        yield session
    finally:
        session.stop()


def pull_until(g, sub: str, done: Callable[[list], bool], timeout: float) -> list:
    """Pulls (and acks) until done(messages) holds or the timeout passes."""
    out: list = []
    deadline = time.monotonic() + timeout
    while not done(out) and time.monotonic() < deadline:
        resp = g.subscriber.pull(request={"subscription": sub, "max_messages": 1000},
                                 timeout=max(0.5, min(5.0, deadline - time.monotonic())))
        if resp.received_messages:
            out.extend(resp.received_messages)
            ids = [m.ack_id for m in resp.received_messages]
            g.subscriber.acknowledge(request={"subscription": sub, "ack_ids": ids})
    return out


def parse_id(msg_id: str) -> tuple[str, int, int, int]:
    """`<query or write id>-<batch>-<partition>-<row>`: the query id is a UUID
    with dashes of its own, so split from the right."""
    head, batch, part, row = msg_id.rsplit("-", 3)
    return head, int(batch), int(part), int(row)


def assert_per_key_order_within_tasks(received: list) -> None:
    """Per ordering key, messages of one task arrive in the order the task
    published them (its row numbers, from the id attribute)."""
    last: dict[tuple[str, str, int, int], int] = {}
    for m in received:
        head, batch, part, row = parse_id(m.message.attributes[ID_ATTR])
        key = (m.message.ordering_key, head, batch, part)
        assert row > last.get(key, -1), f"key {key}: row {row} arrived after row {last[key]}"
        last[key] = row


def sink_options(host_port: str, topic: str, **extra: str) -> dict[str, str]:
    return {"emulatorHost": host_port, "topicId": topic, "idAttribute": ID_ATTR, **extra}


@pytest.mark.spark
@pytest.mark.timeout(180)
def test_batch_write_delivers_every_row_once_with_attributes_and_keys(spark, google) -> None:
    topic, sub = google.topic(ordering=True)
    n = 2000
    df = spark.range(n, numPartitions=2).selectExpr(
        "CAST(CAST(id AS STRING) AS BINARY) AS payload",
        "map('i', CAST(id AS STRING), 'src', 'batch') AS attributes",
        "concat('k', CAST(id % 7 AS STRING)) AS ordering_key",
    )
    (df.write.format("pubsub-go").options(**sink_options(google.host_port, topic))
     .option("enableMessageOrdering", "true").mode("append").save())

    # save() returns only once the server acknowledged every message.
    got = pull_until(google, sub, lambda ms: len(ms) >= n, timeout=60)
    got += google.pull_all(sub, max_wait=2)  # anything extra would be a duplicate
    assert len(got) == n
    payloads = [int(m.message.data) for m in got]
    assert sorted(payloads) == list(range(n))
    for m in got:
        i = int(m.message.data)
        assert m.message.attributes["i"] == str(i) and m.message.attributes["src"] == "batch"
        assert m.message.ordering_key == f"k{i % 7}"
    ids = [m.message.attributes[ID_ATTR] for m in got]
    assert len(set(ids)) == n
    heads = {parse_id(x)[0] for x in ids}
    assert len(heads) == 1 and {parse_id(x)[1] for x in ids} == {0}
    rows = defaultdict(list)
    for x in ids:
        rows[parse_id(x)[2]].append(parse_id(x)[3])
    assert sorted(rows) == [0, 1] and all(sorted(r) == list(range(len(r))) for r in rows.values())
    assert_per_key_order_within_tasks(got)


def write_json_file(directory: Path, name: str, rows: list[dict]) -> None:
    """Atomically adds a file to a file-stream source directory."""
    tmp = directory.parent / f".{name}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.rename(tmp, directory / name)


@pytest.mark.spark
@pytest.mark.timeout(180)
def test_stream_write_delivers_every_row_once_with_attributes_and_keys(spark, google, tmp_path: Path) -> None:
    topic, sub = google.topic(ordering=True)
    work = tmp_path
    src = work / "in"
    src.mkdir()
    n_files, per_file = 2, 1000
    for f in range(n_files):
        write_json_file(src, f"f{f}.json", [{"i": f * per_file + j, "key": f"f{f}-k{j % 5}"}
                                            for j in range(per_file)])
    q = (
        spark.readStream.schema("i LONG, key STRING").option("maxFilesPerTrigger", 1).json(str(src))
        .selectExpr("CAST(i AS STRING) AS payload",
                    "map('i', CAST(i AS STRING), 'key', key) AS attributes",
                    "key AS ordering_key")
        .writeStream.format("pubsub-go").options(**sink_options(google.host_port, topic))
        .option("enableMessageOrdering", "true").option("checkpointLocation", str(work / "ck"))
        .trigger(availableNow=True).start()
    )
    assert q.awaitTermination(120), "the availableNow query did not finish"
    assert q.exception() is None

    n = n_files * per_file
    got = pull_until(google, sub, lambda ms: len(ms) >= n, timeout=60)
    got += google.pull_all(sub, max_wait=2)
    assert len(got) == n
    assert sorted(int(m.message.data) for m in got) == list(range(n))
    for m in got:
        i = int(m.message.data)
        key = f"f{i // per_file}-k{(i % per_file) % 5}"
        assert m.message.attributes["i"] == str(i) and m.message.attributes["key"] == key
        assert m.message.ordering_key == key
    ids = [parse_id(m.message.attributes[ID_ATTR]) for m in got]
    assert len(set(ids)) == n
    assert {x[0] for x in ids} == {str(q.id)}  # the query id: stable across restarts from the checkpoint
    assert {x[1] for x in ids} == {0, 1}  # one micro-batch per file
    assert_per_key_order_within_tasks(got)


# -- fault: the emulator dies mid-write -----------------------------------------

def _committed(checkpoint: Path, batch: int) -> bool:
    return (checkpoint / "commits" / str(batch)).exists()


@pytest.mark.spark
@pytest.mark.timeout(240)
def test_emulator_killed_mid_write_loses_nothing_after_restart(spark, fresh_emulator, monkeypatch,
                                                               tmp_path: Path) -> None:
    """What "delivered" can mean here: a message is delivered once the
    server acknowledged its Publish. The official emulator keeps nothing
    across a restart, not even acknowledged messages, so messages it
    acknowledged before the kill but that our reader had not pulled yet are
    lost by the emulator, not by the sink, and no reader can see them. The
    test therefore checks what the sink promises, in windows it can see:

    1. batch 0 is committed and completely readable before the kill (a
       committed batch was fully acknowledged);
    2. batch 1 is killed mid-write: its first rows have reached the
       subscription, so the write is under way, and it is not committed;
    3. after the restart the topic is NOT recreated until the query has
       failed, so the interrupted write cannot half-succeed against the new
       emulator: it must fail (UNAVAILABLE while the emulator is down or
       NOT_FOUND once it is back without the topic) with a clear error;
    4. the topic and a subscription are recreated and the query restarts
       from its checkpoint: the subscription, created before anything is
       published to the new emulator, must get every row of batch 1 (the
       uncommitted batch is replayed whole) and of the later batch 2.
       Rows of batch 1 seen before the kill come again (at least once:
       duplicates allowed, loss not) with the same id attribute, so a
       consumer can drop them.
    """
    from google_peer import GoogleClients

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", os.environ.get("PUBSUB_EMULATOR_HOST", ""))  # restored after
    g = GoogleClients(fresh_emulator.host_port)
    topic, sub = g.topic()
    work = tmp_path
    src, ck = work / "in", work / "ck"
    src.mkdir()
    sizes = [300, 2000, 300]  # batch 1 takes ~4 s to produce (2 ms a row): time to kill it mid-way
    first = [sum(sizes[:f]) for f in range(len(sizes))]

    def rows_of(f: int) -> set[int]:
        return set(range(first[f], first[f] + sizes[f]))

    def add_file(f: int) -> None:
        write_json_file(src, f"f{f}.json", [{"i": i} for i in sorted(rows_of(f))])

    def start():
        return (
            spark.readStream.schema("i LONG").option("maxFilesPerTrigger", 1).json(str(src))
            # A deliberately slow producer: Thread.sleep(2 ms) per row, so batch 1's
            # write spans seconds. Rows of ~2 KB overflow Spark's 64 KB stream
            # buffer, so the sink gets every 100-row Arrow batch as it is made.
            .selectExpr("concat(CAST(i AS STRING), ':', "
                        "coalesce(java_method('java.lang.Thread', 'sleep', CAST(2 AS BIGINT)), ''), "
                        "repeat('x', 2000)) AS payload")
            .writeStream.format("pubsub-go")
            .options(**sink_options(fresh_emulator.host_port, topic, retryTimeoutMs="20000"))
            .option("checkpointLocation", str(ck)).trigger(processingTime="200 milliseconds").start()
        )

    def row(m) -> int:
        return int(m.message.data.split(b":")[0])

    def data(msgs: list) -> list[int]:
        return [row(m) for m in msgs]

    old_conf = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")  # hand the sink rows as they come
    try:
        add_file(0)
        q = start()
        before = pull_until(g, sub, lambda ms: rows_of(0) <= set(data(ms)), timeout=60)
        assert rows_of(0) <= set(data(before)), "batch 0 did not arrive"
        deadline = time.monotonic() + 30
        while not _committed(ck, 0) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _committed(ck, 0)

        add_file(1)
        before += pull_until(g, sub, lambda ms: bool(rows_of(1) & set(data(ms))), timeout=60)
        fresh_emulator.kill()
        seen_of_1 = rows_of(1) & set(data(before))
        assert seen_of_1, "batch 1 never reached the emulator"
        assert seen_of_1 != rows_of(1) and not _committed(ck, 1), "batch 1 finished before the kill"

        fresh_emulator.restart()
        with pytest.raises(Exception) as failure:
            q.awaitTermination(90)
        msg = str(failure.value)
        assert ("UNAVAILABLE" in msg or "NOT_FOUND" in msg) and topic in msg, msg[:2000]
        assert not _committed(ck, 1)

        g.publisher.create_topic(name=topic, timeout=30)
        g.subscriber.create_subscription(request={"name": sub, "topic": topic}, timeout=30)
        q = start()
        add_file(2)
        want = rows_of(1) | rows_of(2)
        after = pull_until(g, sub, lambda ms: want <= set(data(ms)), timeout=90)
        q.stop()
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", old_conf)

    missing = want - set(data(after))
    assert not missing, f"{len(missing)} rows lost, e.g. {sorted(missing)[:10]}"
    # The replayed rows carry the ids they had before the kill.
    ids_before = {row(m): m.message.attributes[ID_ATTR] for m in before}
    ids_after = {row(m): m.message.attributes[ID_ATTR] for m in after}
    assert all(ids_after[i] == ids_before[i] for i in seen_of_1)
    assert len(set(ids_after.values())) == len(ids_after)


# -- bad input: clear errors within a bounded time ------------------------------

def _write(df, **options: str) -> None:
    df.write.format("pubsub-go").options(**options).mode("append").save()


@pytest.mark.spark
@pytest.mark.timeout(60)
def test_missing_payload_fails_at_analysis(spark, google, tmp_path: Path) -> None:
    topic, _ = google.topic()
    with pytest.raises(Exception) as e:
        _write(spark.range(3), **sink_options(google.host_port, topic))
    assert "missing column 'payload'" in str(e.value) and "unexpected column 'id'" in str(e.value)
    assert "accepted columns" in str(e.value)

    q = (spark.readStream.format("rate").load().writeStream.format("pubsub-go")
         .options(**sink_options(google.host_port, topic))
         .option("checkpointLocation", str(tmp_path / "ck")).start())
    with pytest.raises(Exception) as e:
        q.awaitTermination(30)
    assert "missing column 'payload'" in str(e.value) and "unexpected column 'timestamp'" in str(e.value)
    assert q.lastProgress is None  # failed before its first micro-batch


@pytest.mark.spark
@pytest.mark.timeout(60)
def test_missing_topic_id_fails_at_analysis(spark, google) -> None:
    with pytest.raises(Exception) as e:
        _write(spark.range(3).selectExpr("CAST(id AS STRING) AS payload"), emulatorHost=google.host_port)
    assert "option topicId is required" in str(e.value)


@pytest.mark.spark
@pytest.mark.timeout(120)
def test_message_over_10mb_fails_the_task_with_the_limit(spark, google) -> None:
    topic, sub = google.topic()
    df = spark.range(1).selectExpr("CAST(repeat('x', 11000000) AS BINARY) AS payload")
    with pytest.raises(Exception) as e:
        _write(df, **sink_options(google.host_port, topic))
    assert "InvalidArgumentError" in str(e.value) and "over the 10000000-byte limit" in str(e.value)
    assert google.pull_all(sub, max_wait=1) == []


@pytest.mark.spark
@pytest.mark.timeout(120)
def test_unknown_topic_fails_with_not_found(spark, google) -> None:
    topic = f"projects/{google.project}/topics/missing-{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    with pytest.raises(Exception) as e:
        _write(spark.range(5).selectExpr("CAST(id AS STRING) AS payload"),
               **sink_options(google.host_port, topic))
    assert "NOT_FOUND" in str(e.value) and topic in str(e.value)
    assert time.monotonic() - t0 < 60
