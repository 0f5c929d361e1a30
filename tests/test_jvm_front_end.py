"""The JVM front end (jvm/, docs/jvm.md) on PySpark 3.5.7 and 4.3 with the
jar, against Google's official emulator, Google's client as the outside
peer. One Spark application per version runs every scenario below in turn
(a JVM per scenario would cost CI minutes), then each test checks its part:

- AvailableNow twice on one checkpoint (20,000 then 10,000 messages):
  exactly once into parquet, nothing left unacked, the second run bounded
  by maxRecordsPerTrigger, the figures in each micro-batch's progress;
- a streaming query stopped and restarted twice in one application;
- batch and streaming writes (payload, attributes, ordering key, event
  time, idAttribute), checked with Google's client;
- bad options and bad input rows fail naming the problem;
- the source's options of issue 52 (tests/jvm/source_steps.py): other
  connectors' names taking effect, inline credentials shown nowhere,
  attribute columns, topicId's subscription with its settings, the start
  positions (first start only) and deletion on stop; maxBytesPerTrigger
  and maxBytesPerPartition, minRecordsPerTrigger with maxTriggerDelay,
  ackOnCommit=false, subscriberIdleMs=0;
- a Spark Connect client reading and writing through the application's
  Connect server (on 3.5 with Spark's spark-connect_2.12 jar), whose only
  pubsub-go is the jar."""

from __future__ import annotations

from pathlib import Path

import pytest

import jvm_front_end
from emulators import free_port
from jvm_front_end import VERSIONS, Job, batches

pytestmark = pytest.mark.timeout(1800)

WRITE_EXPRS = ["CAST(concat('p', id) AS BINARY) AS payload",
               "map('k', CAST(id AS STRING), 'even', CAST(id % 2 = 0 AS STRING)) AS attributes",
               "concat('key', CAST(id % 3 AS STRING)) AS ordering_key",
               "CAST(id * 1000 AS TIMESTAMP) AS event_time"]
BAD_OPTIONS = [  # (options, words the error must hold)
    ({"batchSize": "0"}, ("batchSize is 0", "1..1000000")),                   # below the contract's range
    ({"maxWaitTimeMs": "soon"}, ("maxWaitTimeMs is soon", "500ms")),          # not a duration
    ({"bogusOption": "1"}, ("unknown source option bogusOption", "subscriptionId")),
    ({"drainBacklog": "true"}, ("drainBacklog is not taken by the JVM front end", "availableNow")),  # by design
    ({"maxWorkerMemoryBytes": str(2**28)}, ("maxWorkerMemoryBytes is not taken by the JVM", "maxBytesPerPartition")),
    ({"failOnDataLoss": "false"}, ("failOnDataLoss", "messageRetentionSeconds")),   # refused, with the reason
    ({"maxOffsetsPerTrigger": "10", "maxRecordsPerTrigger": "20"},                  # two names, two values
     ("maxOffsetsPerTrigger='10'", "maxRecordsPerTrigger='20'", "different values")),
]


class Run:
    """What one application's scenarios left: the job's result and the names."""

    def __init__(self, line: str, result: dict, names: dict) -> None:
        self.line, self.result, self.names = line, result, names


def payloads(start: int, n: int) -> list[bytes]:
    return [f"m{i}".encode() for i in range(start, start + n)]


@pytest.fixture(scope="module", params=VERSIONS)
def run(request, google, tmp_path_factory) -> Run:
    line = request.param
    tmp: Path = tmp_path_factory.mktemp(f"jvm-{line}")
    host = google.host_port
    names: dict = {}
    names["avail_topic"], names["avail_sub"] = google.topic()
    names["stream_topic"], names["stream_sub"] = google.topic()
    names["batch_topic"], names["batch_sub"] = google.topic(ordering=True)
    names["swrite_topic"], names["swrite_sub"] = google.topic(ordering=True)
    names["bad_topic"], names["bad_sub"] = google.topic()
    names["connect_topic"], names["connect_sub"] = google.topic()
    names["avail_ids"] = google.publish(names["avail_topic"], payloads(0, 20_000))
    names["stream_ids"] = google.publish(names["stream_topic"], payloads(0, 6000))
    write_opts = {"emulatorHost": host, "enableMessageOrdering": "true", "timestampAttribute": "ts",
                  "idAttribute": "uid"}
    bad = {"topicId": names["bad_topic"], "emulatorHost": host}
    more = tmp / "published-more"
    steps = [
        {"kind": "available_now", "key": "avail"},
        {"kind": "wait_file", "path": str(more)},
        {"kind": "available_now", "key": "avail", "options": {"maxRecordsPerTrigger": 2999}},
        {"kind": "ids", "key": "avail_out"},
        {"kind": "streaming", "key": "stream", "subscription": names["stream_sub"], "out": str(tmp / "s-out"),
         "checkpoint": str(tmp / "s-ck"), "stop_at": 2000, "options": {"maxRecordsPerTrigger": 1000}},
        {"kind": "streaming", "key": "stream", "subscription": names["stream_sub"], "out": str(tmp / "s-out"),
         "checkpoint": str(tmp / "s-ck"), "stop_at": 1000, "options": {"maxRecordsPerTrigger": 1000}},
        {"kind": "available_now", "key": "stream", "subscription": names["stream_sub"], "out": str(tmp / "s-out"),
         "checkpoint": str(tmp / "s-ck")},
        {"kind": "ids", "key": "stream_out", "out": str(tmp / "s-out")},
        {"kind": "write", "n": 3000, "exprs": WRITE_EXPRS, "options": {"topicId": names["batch_topic"], **write_opts}},
        {"kind": "write", "n": 2000, "exprs": WRITE_EXPRS, "streaming": True,
         "options": {"topicId": names["swrite_topic"], **write_opts}},
        # bad rows and inputs: a refused attribute key, a column the sink does not take, an ordering key
        # without enableMessageOrdering, no payload
        {"kind": "write", "n": 10, "exprs": ["CAST(id AS STRING) AS payload", "map('goog-x', 'v') AS attributes"],
         "options": bad},
        {"kind": "write", "n": 1, "exprs": ["CAST(id AS STRING) AS payload", "id AS extra"], "options": bad},
        {"kind": "write", "n": 1, "exprs": ["CAST(id AS STRING) AS payload", "'k' AS ordering_key"], "options": bad},
        {"kind": "write", "n": 1, "exprs": ["map('a', 'b') AS attributes"], "options": bad},
        {"kind": "errors", "option_sets": [o for o, _ in BAD_OPTIONS]},
    ]
    steps += sink_steps(google, names)
    steps += source_steps(google, names, tmp)
    # The application is also a Spark Connect server (its plugin; on 3.5 Spark's spark-connect jar beside ours)
    names["connect_read_topic"], names["connect_read_sub"] = google.topic()
    google.publish(names["connect_read_topic"], payloads(0, 2000))
    port = free_port()
    jar = jvm_front_end.jar()
    conf = {"spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
            "spark.jars": ",".join([jar, *jvm_front_end.connect_server_jars(line)]),
            "spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(port)}
    steps.append({"kind": "connect", "port": port, "topic": names["connect_topic"], "n": 500,
                  "subscription": names["connect_read_sub"], "out": str(tmp / "c-out"),
                  "checkpoint": str(tmp / "c-ck")})
    job = Job(line, {"jar": jar, "emulator": host, "subscription": names["avail_sub"],
                     "out": str(tmp / "a-out"), "checkpoint": str(tmp / "a-ck"), "steps": steps, "conf": conf})
    job.wait_step("available_now")
    names["avail_ids"] += google.publish(names["avail_topic"], payloads(20_000, 10_000))
    more.touch()
    return Run(line, job.result(timeout=1500), names)


def unacked(google, sub: str) -> int:
    return len(google.pull_all(sub, max_wait=3.0, ack=False))


def test_available_now_twice_on_one_checkpoint_reads_each_message_once(run, google):
    r = run.result
    assert r["spark"].startswith(run.line), r["spark"]
    first, second = r["avail"]
    assert sum(p["numInputRows"] for p in first) == 20_000
    assert sum(p["numInputRows"] for p in second) == 10_000
    ids = r["avail_out"]
    assert len(ids) == 30_000 and sorted(ids) == sorted(run.names["avail_ids"]), "a message missing or written twice"
    assert unacked(google, run.names["avail_sub"]) == 0, "read but not acked at commit"


def test_admission_control_and_the_figures_in_the_progress(run):
    first, second = run.result["avail"]
    sizes = [p["numInputRows"] for p in batches(second)]
    # an odd limit over two tasks: each task's share rounded up would read 3000
    assert max(sizes) <= 2999 and len(sizes) >= 4, sizes  # maxRecordsPerTrigger bounds every micro-batch
    for p in batches(first) + batches(second):
        m = p["sources"][0]["metrics"]
        assert int(m["rows"]) == p["numInputRows"], (m, p["numInputRows"])
        assert int(m["pulled"]) >= int(m["rows"]) and int(m["tasks"]) == 2, m


def test_streaming_query_stopped_and_restarted_reads_each_message_once(run, google):
    runs = run.result["stream"]
    assert sum(p["numInputRows"] for p in runs[0]) >= 2000
    assert sum(p["numInputRows"] for r in runs for p in r) == 6000
    ids = run.result["stream_out"]
    assert len(ids) == 6000 and sorted(ids) == sorted(run.names["stream_ids"]), "a message missing or written twice"
    assert unacked(google, run.names["stream_sub"]) == 0


def check_written(received, n: int) -> None:
    assert len(received) == n, f"{len(received)} messages, wanted {n}"
    by_payload = {m.message.data.decode(): m.message for m in received}
    assert sorted(by_payload) == sorted(f"p{i}" for i in range(n)), "a row missing or published twice"
    for i in range(n):
        m = by_payload[f"p{i}"]
        a = dict(m.attributes)
        assert a["k"] == str(i) and a["even"] == str(i % 2 == 0).lower(), a
        assert a["ts"] == str(i * 1000 * 1000), a  # event time as epoch milliseconds
        assert m.ordering_key == f"key{i % 3}", m.ordering_key
    # idAttribute: <queryId>-<epoch>-<partition>-<row>, distinct per message
    uids = {dict(m.message.attributes)["uid"] for m in received}
    assert len(uids) == n and all(u.count("-") >= 3 for u in uids), sorted(uids)[:5]


def test_batch_and_streaming_writes_deliver_every_row_as_written(run, google):
    assert run.result["writes"][:2] == ["ok", "ok"], run.result["writes"][:2]
    check_written(google.pull_all(run.names["batch_sub"], max_wait=8.0), 3000)
    check_written(google.pull_all(run.names["swrite_sub"], max_wait=8.0), 2000)


def test_bad_input_fails_naming_the_problem_and_publishes_nothing(run, google):
    goog, extra, key, nopayload = run.result["writes"][2:6]
    assert "goog" in goog and "row" in goog, goog[:2000]
    assert "extra" in extra and "payload (binary or string, required)" in extra, extra[:2000]
    assert "enableMessageOrdering" in key, key[:2000]
    assert "no payload column" in nopayload, nopayload[:2000]
    assert google.pull_all(run.names["bad_sub"], max_wait=3.0) == [], "a write that failed published something"


def test_bad_options_fail_at_start_naming_the_option_and_what_is_right(run):
    errors = run.result["errors"]
    assert len(errors) == len(BAD_OPTIONS)
    for err, (_, words) in zip(errors, BAD_OPTIONS, strict=True):
        for w in words:  # Spark lower-cases option keys before a source sees them
            assert w.lower() in err.lower(), (w, err[:1500])


def test_a_spark_connect_client_reads_and_writes_through_a_server_with_the_jar(run, google):
    r = run.result["connect"]
    assert r["description"].startswith("pubsub-go["), r  # the JVM source (the Python one names itself otherwise)
    assert r["read"] == 2000, r
    got = sorted(m.message.data.decode() for m in google.pull_all(run.names["connect_sub"], max_wait=6.0))
    assert got == sorted(f"c{i}" for i in range(500))


# -- the sink's topic column (issue 54) -------------------------------------------------------------
ROUTE_N = 3000


def sink_steps(google, names: dict) -> list[dict]:
    """The sink's steps (tests/jvm/sink_steps.py): rows routed by a topic column to a short id, a full path
    and (null) topicId, with idAttribute; a row naming a missing topic; a null topic without topicId; then
    schemaFrom=topic (an Avro schema) for good rows, a null its schema cannot hold, a column it has no field for."""
    host, project = google.host_port, google.project
    steps = route_steps(google, names, host, project)
    return steps + schema_steps(google, names, host) + pool_steps(google, names, host)


def route_steps(google, names: dict, host: str, project: str) -> list[dict]:
    for k in ("route_a", "route_b", "route_default", "route_good"):
        names[k + "_topic"], names[k + "_sub"] = google.topic()
    names["route_missing"] = f"projects/{project}/topics/missing-{names['route_a_topic'].rsplit('-', 1)[-1]}"
    short_a = names["route_a_topic"].rsplit("/", 1)[-1]
    route = ("CASE id % 3 WHEN 0 THEN '" + short_a + "' WHEN 1 THEN '" + names["route_b_topic"]
             + "' ELSE NULL END AS topic")
    return [
        {"kind": "sink_write", "key": "routed", "n": ROUTE_N,
         "exprs": ["CAST(concat('r', id) AS BINARY) AS payload", route],
         "options": {"topicId": names["route_default_topic"], "projectId": project, "emulatorHost": host,
                     "idAttribute": "uid"}},
        {"kind": "sink_write", "key": "routed", "n": 100, "partitions": 1,
         "exprs": ["CAST(concat('g', id) AS BINARY) AS payload",
                   f"IF(id = 50, '{names['route_missing']}', '{names['route_good_topic']}') AS topic"],
         "options": {"emulatorHost": host}},
        {"kind": "sink_write", "key": "routed", "n": 5, "partitions": 1,
         "exprs": ["CAST(concat('g', id) AS BINARY) AS payload",
                   f"IF(id = 3, NULL, '{names['route_good_topic']}') AS topic"],
         "options": {"emulatorHost": host}},
    ]


def test_rows_routed_by_their_topic_column_reach_exactly_their_topics(run, google):
    assert run.result["routed"][0] == "ok", run.result["routed"][0][:2000]
    for key, rest in (("route_a", 0), ("route_b", 1), ("route_default", 2)):
        got = google.pull_all(run.names[key + "_sub"], max_wait=6.0)
        payloads = sorted(m.message.data.decode() for m in got)
        assert payloads == sorted(f"r{i}" for i in range(ROUTE_N) if i % 3 == rest), (key, len(payloads))
        # idAttribute: each topic's publisher numbers its own rows, distinct within the topic
        uids = {dict(m.message.attributes)["uid"] for m in got}
        assert len(uids) == len(got), key


def test_a_row_naming_a_missing_topic_fails_naming_it_and_publishes_nothing_of_its_batch(run, google):
    missing, null_topic = run.result["routed"][1:3]
    assert run.names["route_missing"] in missing and "NOT_FOUND" in missing, missing[:2000]
    assert "row 50" in missing, missing[:2000]  # the row that named it
    assert "topic column is null and option topicId is not set" in null_topic, null_topic[:2000]
    assert "row 3" in null_topic or "set topicId for rows without one" in null_topic, null_topic[:2000]
    # Both failed before their rows were handed over (one batch each): the good topic got none.
    assert google.pull_all(run.names["route_good_sub"], max_wait=3.0) == []



# -- the source's options of issue 52 (tests/jvm/source_steps.py) ------------------------------------
SECRET = "TOPSECRET-52a9"  # in the credentials the source steps give; must show nowhere


def source_steps(google, names: dict, tmp: Path) -> list[dict]:
    names["alias_topic"], names["alias_sub"] = google.topic()
    names["alias_ids"] = google.publish(names["alias_topic"], payloads(0, 1500))
    names["life_topic"], _ = google.topic()  # a subscription of its own the source does not read
    names["life_dlq"], _ = google.topic()
    p = google.project
    suffix = names["life_topic"].rsplit("-", 1)[-1]
    names["life_sub"] = f"projects/{p}/subscriptions/c-{suffix}"
    names["life_sub2"] = f"projects/{p}/subscriptions/o-{suffix}"
    names["life_sub3"] = f"projects/{p}/subscriptions/d-{suffix}"
    names["life_snap"] = f"projects/{p}/snapshots/snap-{suffix}"
    names["bytes_topic"], names["bytes_sub"] = google.topic()
    names["bytes_ids"] = google.publish(names["bytes_topic"], [(b"%06d" % i).ljust(BYTES_PAYLOAD, b".")
                                                               for i in range(BYTES_N)])
    for k, n in (("min_short", MIN_SHORT_N), ("min_met", MIN_MET_N)):
        names[k + "_topic"], names[k + "_sub"] = google.topic()
        google.publish(names[k + "_topic"], payloads(0, n))
    for k in ("ack_commit", "ack_task"):
        names[k + "_topic"], names[k + "_sub"] = google.topic()
        google.publish(names[k + "_topic"], payloads(0, ACK_N))
    names["outstanding_topic"], names["outstanding_sub"] = google.topic()
    names["outstanding_ids"] = google.publish(names["outstanding_topic"], payloads(0, OUTSTANDING_N))
    names["idle_topic"], names["idle_sub"] = google.topic()
    google.publish(names["idle_topic"], payloads(0, IDLE_N))
    names["attr_topic"], names["attr_sub"] = google.topic()
    google.publish(names["attr_topic"], [b"a0", b"a1", b"a2", b"a3"],
                   [{"region": "eu", "ts": "1700000000123"}, {"region": "us", "ts": "2023-11-14T22:13:20.5Z"},
                    {"ts": "yesterday"}, {}])
    return [
        {"kind": "aliases", "key": "aliases", "secret": SECRET, "subscription": names["alias_sub"],
         "out": str(tmp / "al-out"), "checkpoint": str(tmp / "al-ck")},
        {"kind": "bad_credentials", "key": "bad_credentials", "secret": SECRET, "checkpoint": str(tmp / "bc-ck")},
        {"kind": "attribute_columns", "key": "attribute_columns", "subscription": names["attr_sub"],
         "out": str(tmp / "at-out"), "checkpoint": str(tmp / "at-ck"),
         "options": {"attributeColumns": "region,absent", "timestampAttribute": "ts", "timestampColumn": "et"}},
        {"kind": "lifecycle", "key": "lifecycle", "topic": names["life_topic"], "dlq": names["life_dlq"],
         "subscription": names["life_sub"], "subscription2": names["life_sub2"], "subscription3": names["life_sub3"],
         "snapshot": names["life_snap"], "tmp": str(tmp)},
        {"kind": "byte_limits", "key": "byte_limits", "subscription": names["bytes_sub"], "out": str(tmp / "by-out"),
         "checkpoint": str(tmp / "by-ck"), "options": {"numPartitions": 2, "maxBytesPerTrigger": BYTES_PER_TRIGGER,
                                                       "maxBytesPerPartition": BYTES_PER_PARTITION,
                                                       "minRecordsPerTrigger": 100_000, "maxTriggerDelay": "10m",
                                                       "commitLeaseSeconds": ACK_LEASE_S}},
        {"kind": "min_records", "key": "min_records", "bad": [o for o, _ in BAD_MINIMUMS],
         "short": {"subscription": names["min_short_sub"], "out": str(tmp / "ms-out"), "checkpoint": str(tmp / "ms-ck"),
                   "stop_at": MIN_SHORT_N, "options": {"numPartitions": 1, "minRecordsPerTrigger": 500,
                                                       "maxTriggerDelay": f"{MIN_DELAY_S}s"}},
         "met": {"subscription": names["min_met_sub"], "out": str(tmp / "mm-out"), "checkpoint": str(tmp / "mm-ck"),
                 "stop_at": 500, "options": {"numPartitions": 1, "minOffsetsPerTrigger": 500,
                                                   "maxTriggerDelay": f"{MIN_MET_DELAY_S}s"}}},
        {"kind": "ack_on_commit", "key": "ack_on_commit",
         "at_commit": {"subscription": names["ack_commit_sub"], "checkpoint": str(tmp / "ac-ck"),
                       "options": {"commitLeaseSeconds": ACK_LEASE_S}},
         "at_task": {"subscription": names["ack_task_sub"], "checkpoint": str(tmp / "at-ck"),
                     "options": {"commitLeaseSeconds": ACK_LEASE_S, "ackOnCommit": "false"}}},
        {"kind": "available_now", "key": "outstanding", "subscription": names["outstanding_sub"],
         "out": str(tmp / "mo-out"), "checkpoint": str(tmp / "mo-ck"),
         # one stream (no catching-up streams): each stream may overshoot the limit by the response in hand
         "options": {"numPartitions": 2, "maxOutstandingMessages": OUTSTANDING, "maxBatchDurationMs": 3000,
                     "catchUpStreamsPerPartition": 1}},
        {"kind": "ids", "key": "outstanding_out", "out": str(tmp / "mo-out")},
        {"kind": "subscriber_idle", "key": "subscriber_idle", "subscription": names["idle_sub"],
         "out": str(tmp / "si-out"), "checkpoint": str(tmp / "si-ck"), "stop_at": IDLE_N,
         "options": {"numPartitions": 1, "maxRecordsPerTrigger": IDLE_N // 4, "subscriberIdleMs": 0}},
    ]


BYTES_N, BYTES_PAYLOAD = 2000, 1000
OUTSTANDING_N, OUTSTANDING = 400, 20
BYTES_PER_TRIGGER, BYTES_PER_PARTITION = 300_000, 100_000
# A stopped query's batch that is waiting for its minimum ends when Spark kills its task, or, when the stop came
# before the batch's job started, after the delay: MIN_MET_DELAY_S is what the stop of "met" may take.
MIN_SHORT_N, MIN_MET_N, MIN_DELAY_S, MIN_MET_DELAY_S = 200, 600, 12, 60
BAD_MINIMUMS = [  # (options, words the error must hold)
    ({"maxTriggerDelay": "5s"}, ("maxTriggerDelay only applies with minRecordsPerTrigger",)),
    ({"minRecordsPerTrigger": 10, "maxRecordsPerTrigger": 5},
     ("minRecordsPerTrigger=10 exceeds maxRecordsPerTrigger=5",)),
    ({"maxBytesPerPartition": 0}, ("maxBytesPerPartition is 0", "1..1099511627776")),
]


def test_max_bytes_per_trigger_bounds_every_micro_batch_and_available_now_still_reads_everything(run, google):
    r = run.result["byte_limits"][0]
    assert r["error"] is None, r["error"][:2000]
    assert sorted(r["ids"]) == sorted(run.names["bytes_ids"]), "a message missing or read twice"
    figures = [(p["numInputRows"], p["sources"][0]["metrics"]) for p in batches(r["progress"])]
    # Each row holds its 1000-byte payload, so the byte cap bounds the rows; a task may go one row over its share.
    for rows, m in figures:
        assert int(m["bytes"]) <= BYTES_PER_TRIGGER + 2 * 2 * BYTES_PAYLOAD, figures
        assert rows <= BYTES_PER_TRIGGER // BYTES_PAYLOAD + 2, figures
    assert len(figures) >= BYTES_N * BYTES_PAYLOAD // BYTES_PER_TRIGGER, figures  # so many batches, none waiting
    # maxBytesPerPartition is each subscriber's flow control: a backlog of 2 MB fills 100 KB.
    assert sum(int(m["flow_full_ms"]) for _, m in figures) > 0, figures
    # Acked, the run's last batch too (Spark commits it to the source only at the next run's first batch): with
    # the run's short lease, rows left leased would have come again by now.
    assert unacked(google, run.names["bytes_sub"]) == 0


def test_min_records_per_trigger_waits_up_to_max_trigger_delay_for_its_rows(run):
    r = run.result["min_records"][0]
    short, met = batches(r["short"]["progress"]), batches(r["met"]["progress"])
    assert r["short"]["error"] is None and r["met"]["error"] is None, (r["short"]["error"], r["met"]["error"])
    # 200 there, 500 asked for: the first micro-batch waits out maxTriggerDelay, then takes what there is.
    assert short[0]["numInputRows"] == MIN_SHORT_N, [p["numInputRows"] for p in short]
    assert short[0]["durationMs"]["triggerExecution"] >= (MIN_DELAY_S - 1) * 1000, short[0]["durationMs"]
    # 600 there: the minimum (Kafka's name for it) is met at once, before the delay.
    assert met[0]["numInputRows"] >= 500, [p["numInputRows"] for p in met]
    assert met[0]["durationMs"]["triggerExecution"] < MIN_MET_DELAY_S * 1000, met[0]["durationMs"]
    for err, (_, words) in zip(r["errors"], BAD_MINIMUMS, strict=True):
        for w in words:
            assert w in err, (w, err[:1500])


ACK_N, ACK_LEASE_S = 300, 10


def test_ack_on_commit_false_acks_what_a_task_read_though_spark_never_commits_it(run, google):
    import time

    r = run.result["ack_on_commit"][0]
    for name in ("at_commit", "at_task"):
        assert r[name]["error"] and "the batch fails after its tasks ended" in r[name]["error"], r[name]
        assert r[name]["counted"][:1] == [ACK_N], r[name]  # every message read by the batch that failed
    time.sleep(ACK_LEASE_S)  # the failed query's leases lapse (the job ran on after it, too)
    # ackOnCommit (the default): uncommitted, so redelivered; false: acked by the task.
    assert len(google.pull_all(run.names["ack_commit_sub"], max_wait=5.0, ack=False)) == ACK_N
    assert unacked(google, run.names["ack_task_sub"]) == 0


IDLE_N = 400


def test_max_outstanding_messages_bounds_each_task_and_nothing_is_lost(run, google):
    [progress] = run.result["outstanding"]
    figures = [(p["numInputRows"], p["sources"][0]["metrics"]) for p in batches(progress)]
    sizes = [rows for rows, _ in figures]
    # A task's rows stay outstanding until it ends, so a task stops taking messages once it holds the limit, and
    # the backlog takes several micro-batches. A task may go over by the one response in hand when the limit is
    # reached, whose size the server picks. Unset, flow control is the task's row
    # cap + batchSize: the backlog fits in one micro-batch, and flow control is never full.
    assert sum(sizes) == OUTSTANDING_N and len(sizes) >= 2, sizes
    assert sum(int(m["flow_full_ms"]) for _, m in figures) > 0, figures
    ids = run.result["outstanding_out"]
    assert sorted(ids) == sorted(run.names["outstanding_ids"]), "a message missing or read twice"
    assert unacked(google, run.names["outstanding_sub"]) == 0


def test_subscriber_idle_ms_zero_gives_every_task_a_subscriber_of_its_own(run):
    r = run.result["subscriber_idle"][0]
    assert r["error"] is None, r["error"][:2000]
    figures = [(p["numInputRows"], int(p["sources"][0]["metrics"]["handed_out"])) for p in batches(r["progress"])]
    # A subscriber's counters run over its life: a kept one would count the earlier batches' rows too.
    assert len(figures) >= 3 and all(rows == out for rows, out in figures), figures


def test_other_connectors_option_names_take_effect_and_the_key_shows_nowhere(run, google):
    r = run.result["aliases"][0]
    assert r["error"] is None, r["error"][:2000]
    assert sorted(r["ids"]) == sorted(run.names["alias_ids"]), "pubsublite.subscription read something else"
    sizes = [p["numInputRows"] for p in batches(r["progress"])]
    assert max(sizes) <= 600 and sum(sizes) == 1500, sizes  # maxOffsetsPerTrigger (600 splits evenly in 3)
    assert {int(p["sources"][0]["metrics"]["tasks"]) for p in batches(r["progress"])} == {3}  # numFetchPartitions
    assert r["leaks"] == [], r["leaks"]  # Databricks' privateKey: not in the plan, progress or explain
    assert unacked(google, run.names["alias_sub"]) == 0


def test_bad_inline_credentials_fail_naming_the_option_never_showing_the_secret(run):
    errors = run.result["bad_credentials"][0]
    for err, words in zip(errors, (["credentialsJson is not valid JSON"],
                                   ["credentialsJson: a service_account key needs private_key and client_email"],
                                   ["gcp.credentials.key is not valid base64"],
                                   ["privateKey is not a PEM private key"]), strict=True):
        for w in words:
            assert w.lower() in err.lower(), (w, err[:1500])
        assert SECRET not in err, err[:1500]


def test_attribute_columns_and_the_event_time_come_from_each_messages_attributes(run):
    r = run.result["attribute_columns"][0]
    assert r["error"] is None, r["error"][:2000]
    assert r["columns"][-3:] == ["region", "absent", "et"], r["columns"]
    assert r["rows"] == [["a0", "eu", None, 1_700_000_000_123_000], ["a1", "us", None, 1_700_000_000_500_000],
                         ["a2", None, None, None], ["a3", None, None, None]], r["rows"]
    figures = [p["sources"][0]["metrics"] for p in batches(r["progress"])]
    assert sum(int(m.get("eventTimeErrors", 0)) for m in figures) == 2, figures  # a bad ts and a missing one



def test_topic_id_creates_the_subscription_and_start_positions_seek_on_the_first_start_only(run, google):
    from google.api_core.exceptions import NotFound

    runs = run.result["lifecycle"][0]["runs"]
    for name, r in runs.items():
        assert r["error"] is None, (name, r["error"][:2000])
    # Google's emulator keeps a subscription's filter but delivers every message (the filter is checked as
    # the created subscription's setting below, as tests/test_lifecycle.py does).
    published = sorted(f"f{i}" for i in range(20))
    assert runs["created"]["payloads"] == [] and runs["read"]["payloads"] == published, runs["read"]
    assert runs["snapshot"]["payloads"] == published, runs["snapshot"]  # startingSnapshot: from before the read
    assert runs["timestamp"]["payloads"] == published, runs["timestamp"]  # acked, retained, read again
    assert runs["restart"]["payloads"] == [], runs["restart"]  # never seeked again on its checkpoint
    s = google.subscriber.get_subscription(subscription=run.names["life_sub"], timeout=10)
    assert s.topic == run.names["life_topic"] and s.filter == 'attributes.keep = "yes"', s
    assert s.retain_acked_messages and not s.enable_message_ordering and not s.enable_exactly_once_delivery, s
    assert s.message_retention_duration.total_seconds() == 7200, s.message_retention_duration
    assert (s.dead_letter_policy.dead_letter_topic, s.dead_letter_policy.max_delivery_attempts) == (
        run.names["life_dlq"], 7), s.dead_letter_policy
    o = google.subscriber.get_subscription(subscription=run.names["life_sub2"], timeout=10)
    assert o.enable_message_ordering and o.enable_exactly_once_delivery and not o.filter, o
    with pytest.raises(NotFound):  # deleteSubscriptionOnStreamStop
        google.subscriber.get_subscription(subscription=run.names["life_sub3"], timeout=10)

# -- the sink's schemaFrom=topic (issue 54) ---------------------------------------------------------
SCHEMA_N = 500
ROW_SCHEMA = {"type": "record", "name": "Row", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "note", "type": ["null", "string"], "default": None}, {"name": "score", "type": "double"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}
SCHEMA_EXPRS = ["id", "concat('n', id) AS name", "IF(id % 2 = 0, NULL, concat('x', id)) AS note",
                "CAST(id AS DOUBLE) / 4 AS score", "array(CAST(id AS STRING), 'z') AS tags",
                "map('k', CAST(id AS STRING)) AS attributes"]


def schema_steps(google, names: dict, host: str) -> list[dict]:
    from google.cloud.pubsub import SchemaServiceClient

    from test_topic_schema import create_schema, schema_topic

    sch = create_schema(google, SchemaServiceClient(), ROW_SCHEMA)
    names["schema_topic"], (names["schema_sub"],) = schema_topic(google, sch.name)
    opts = {"topicId": names["schema_topic"], "emulatorHost": host, "schemaFrom": "topic"}
    return [
        {"kind": "sink_write", "key": "schema", "n": SCHEMA_N, "exprs": SCHEMA_EXPRS,
         "options": {**opts, "schemaRevision": sch.revision_id}},
        {"kind": "sink_write", "key": "schema", "n": 20, "partitions": 1,  # name is not nullable in the schema
         "exprs": [e if not e.endswith(" AS name") else "IF(id = 7, NULL, concat('n', id)) AS name"
                   for e in SCHEMA_EXPRS], "options": opts},
        {"kind": "sink_write", "key": "schema", "n": 1, "exprs": [*SCHEMA_EXPRS, "id AS extra"], "options": opts},
    ]


def avro_row(data: bytes) -> dict:
    """ROW_SCHEMA's datum from Avro's binary encoding (zig-zag varints, length-prefixed strings, blocks)."""
    import struct

    at = 0

    def long() -> int:
        nonlocal at
        shift = u = 0
        while True:
            b = data[at]
            at += 1
            u |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return (u >> 1) ^ -(u & 1)

    def string() -> str:
        nonlocal at
        n = long()
        at += n
        return data[at - n:at].decode()

    row = {"id": long(), "name": string(), "note": None if long() == 0 else string()}
    row["score"] = struct.unpack("<d", data[at:at + 8])[0]
    at += 8
    tags: list[str] = []
    while (n := long()) != 0:
        tags += [string() for _ in range(abs(n))]
    row["tags"] = tags
    assert at == len(data), "bytes left after the datum"
    return row


def test_schema_from_topic_encodes_each_row_in_the_topics_avro_schema(run, google):
    ok, null_name, extra = run.result["schema"]
    assert ok == "ok", ok[:2000]
    got = google.pull_all(run.names["schema_sub"], max_wait=6.0)
    rows = sorted((avro_row(m.message.data) for m in got), key=lambda r: r["id"])
    assert rows == [{"id": i, "name": f"n{i}", "note": None if i % 2 == 0 else f"x{i}", "score": i / 4,
                     "tags": [str(i), "z"]} for i in range(SCHEMA_N)], rows[:3]
    assert all(dict(m.message.attributes)["k"] == str(avro_row(m.message.data)["id"]) for m in got)
    # A null the schema cannot hold fails the task naming the field (and nothing of its batch goes out);
    # a column the schema has no field for fails at start naming it.
    assert "name" in null_name and "null" in null_name.lower() and "row" in null_name, null_name[:2000]
    assert "extra" in extra and "schemaFrom=topic" in extra, extra[:2000]


# -- the sink's publishers kept between tasks (publisherIdleMs, issue 54) ---------------------------
POOL_N = 1000


def pool_steps(google, names: dict, host: str) -> list[dict]:
    """Two single-task appends per topic with the same options: kept for 60 s, and one per task (0)."""
    steps = []
    for key, idle in (("pool_keep", "60000"), ("pool_none", "0")):
        names[key + "_topic"], names[key + "_sub"] = google.topic()
        steps.append({"kind": "pooled_writes", "key": key, "n": POOL_N, "partitions": 1,
                      "exprs": ["CAST(concat('q', id + {start}) AS BINARY) AS payload"],
                      "options": {"topicId": names[key + "_topic"], "emulatorHost": host, "idAttribute": "uid",
                                  "publisherIdleMs": idle}})
    return steps


def test_publishers_kept_between_tasks_only_with_publisher_idle_ms(run, google):
    for key, kept in (("pool_keep", 1), ("pool_none", 0)):
        (r,) = run.result[key]
        assert r["writes"] == ["ok", "ok"], r
        # The second task took the first one's publisher back and returned it: one idle, or none with 0.
        assert r["idle"] == kept, (key, r)
        got = google.pull_all(run.names[key + "_sub"], max_wait=6.0)
        assert sorted(m.message.data.decode() for m in got) == sorted(f"q{i}" for i in range(2 * POOL_N)), key
        # Each task numbered its rows with its own prefix on the kept publisher: no id twice.
        assert len({dict(m.message.attributes)["uid"] for m in got}) == 2 * POOL_N, key

