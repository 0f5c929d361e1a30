"""Options that act in the Go library, observed at the Go boundary: each
is set to a value of its own (no two alike, none the default), and the
config the Python front end hands the library carries it in the field the
option table names, so a swap of two options in spark/read/options.py,
spark/write/options.py or subscriber_config.py fails here. Where the effect
shows outside the library, a server sees it: bench/loadserver counts the
Publish RPCs and StreamingPull streams a client makes and holds what a
subscriber has not acked, and the auth peers of tests/authpeers.py check
every call's token. Spark adds nothing to these options: it hands the
option map to the same parse (tests/option_coverage.py lists what each
option's test is)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

from pubsub_go.client import Publisher, Subscriber
from pubsub_go.spark.option_table import SINK, SOURCE, table
from pubsub_go.spark.read.options import FLOW_CONTROL_SHARE, SourceOptions
from pubsub_go.spark.read.subscriber_config import subscriber_config
from pubsub_go.spark.write.options import SinkOptions

SUB = "projects/p/subscriptions/s"
TOPIC = "projects/p/topics/t"
RESPONSE = 20  # the load server's most messages per StreamingPull response

# The config field each option sets, written out here rather than read from
# the table, so a table that names the wrong field fails too.
SOURCE_FIELDS = {
    "streamsPerPartition": "streams",
    "catchUpStreamsPerPartition": "catch_up_streams",
    "batchSize": "batch_size",
    "maxWaitTimeMs": "max_wait_ms",
    "maxOutstandingMessages": "max_outstanding_messages",
    "maxBytesPerPartition": "max_outstanding_bytes",
    "ackDeadlineSeconds": "ack_deadline_seconds",
}
SINK_FIELDS = {
    "batchMaxMessages": "max_batch_messages",
    "batchMaxBytes": "max_batch_bytes",
    "lingerMs": "linger_ms",
    "maxInFlightBytes": "max_in_flight_bytes",
    "retryTimeoutMs": "retry_timeout_ms",
    "compressionBytesThreshold": "compression_bytes_threshold",
}


def _contract_field(side: str, struct: str) -> dict[str, str]:
    """The options of a side whose table row names a field of struct."""
    out = {}
    for o in table(side).options:
        for ref in (o.default_contract, o.range_contract):
            if ref and ref.startswith(struct + "."):
                out[o.name] = ref.split(".", 1)[1]
    return out


def _distinct_values(side: str, names: list[str], taken: set[int]) -> dict[str, int]:
    """A value per option within its range, unlike its default and every
    other value chosen (so a swap of two options cannot go unseen)."""
    out = {}
    for name in names:
        o = table(side)[name]
        v = (o.min or 0) + 3
        while v in taken or v == o.default:
            v += 7
        assert o.max is None or v <= o.max, f"no distinct value for {name} in its range"
        taken.add(v)
        out[name] = v
    return out


def test_every_library_config_option_is_wired_here():
    assert _contract_field(SOURCE, "subscriber_config") == SOURCE_FIELDS
    assert _contract_field(SINK, "publisher_config") == SINK_FIELDS


def test_source_options_reach_the_subscriber_config_the_library_gets():
    values = _distinct_values(SOURCE, list(SOURCE_FIELDS), set())
    opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": "127.0.0.1:1", "batchLogLocation": "/tmp/x",
                                **{k: str(v) for k, v in values.items()}})
    sent = json.loads(subscriber_config(opts).to_json())
    assert {name: sent.get(field) for name, field in SOURCE_FIELDS.items()} == values
    # maxWorkerMemoryBytes sizes flow control when maxBytesPerPartition is not given.
    budget = 48 << 20
    opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": "127.0.0.1:1", "batchLogLocation": "/tmp/x",
                                "maxWorkerMemoryBytes": str(budget)})
    assert json.loads(subscriber_config(opts).to_json())["max_outstanding_bytes"] == budget // FLOW_CONTROL_SHARE


def test_sink_options_reach_the_publisher_config_the_library_gets():
    values = _distinct_values(SINK, list(SINK_FIELDS), set())
    # Options the sink keeps for itself (the flush bound, the pool's idle time), distinct from the rest too.
    own = _distinct_values(SINK, ["publishTimeoutMs", "publisherIdleMs"], set(values.values()))
    words = {"idAttribute": "uid", "timestampAttribute": "ts_ms", "timestampColumn": "when"}
    opts = SinkOptions.parse({"topicId": TOPIC, "emulatorHost": "127.0.0.1:1", "compression": "gzip",
                              "enableMessageOrdering": "true", **words,
                              **{k: str(v) for k, v in {**values, **own}.items()}})
    sent = json.loads(opts.publisher_config().to_json())
    assert {name: sent.get(field) for name, field in SINK_FIELDS.items()} == values
    assert (sent["compression"], sent["enable_message_ordering"]) == ("gzip", True)
    assert (sent["id_attribute"], sent["timestamp_attribute"], sent["timestamp_column"]) == tuple(words.values())
    assert (opts.publish_timeout_ms, opts.publisher_idle_ms) == (own["publishTimeoutMs"], own["publisherIdleMs"])
    assert not set(own.values()) & set(sent.values()), "a sink-side option leaked into the library's config"


# -- what a server sees ----------------------------------------------------------

@pytest.fixture()
def load_server() -> Iterator:
    from emulators import LoadServer
    from pubsub_go.client import admin

    server = LoadServer("--payload-bytes", "100", "--backlog-at-start", "--batch", str(RESPONSE))
    try:
        admin("create_topic", emulator_host=server.host_port, topic=TOPIC)
        admin("create_subscription", emulator_host=server.host_port, topic=TOPIC, subscription=SUB)
        yield server
    finally:
        server.stop()


def _until(what: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _publish_rpcs(server, sink_options: dict[str, str], batch: pa.RecordBatch) -> int:
    before = server.stats()["publish_rpcs"]
    opts = SinkOptions.parse({"topicId": TOPIC, "emulatorHost": server.host_port, **sink_options})
    with Publisher(opts.publisher_config()) as pub:
        pub.publish(batch)
        assert pub.flush(timeout_ms=30_000)["published"] == batch.num_rows
    return server.stats()["publish_rpcs"] - before


def test_batch_limits_split_the_publish_requests(load_server):
    n, size = 60, 1000
    batch = pa.record_batch({"payload": pa.array([b"x" * size] * n)})
    # One call, one flush: by default a single request carries all 60.
    assert _publish_rpcs(load_server, {}, batch) == 1
    assert _publish_rpcs(load_server, {"batchMaxMessages": "7"}, batch) >= math.ceil(n / 7)
    # Each message costs its payload and some framing: at most 4 fit in 5,000 bytes.
    assert _publish_rpcs(load_server, {"batchMaxBytes": "5000"}, batch) >= math.ceil(n / 4)


def test_linger_holds_a_small_batch_until_it_runs_out(load_server):
    """lingerMs=60 s: three messages wait for the flush; the default 5 ms
    would have sent them long before the second this test looks after."""
    opts = SinkOptions.parse({"topicId": TOPIC, "emulatorHost": load_server.host_port, "lingerMs": "60000"})
    before = load_server.stats()["publish_rpcs"]
    with Publisher(opts.publisher_config()) as pub:
        pub.publish(pa.record_batch({"payload": pa.array([b"a", b"b", b"c"])}))
        time.sleep(1)
        assert load_server.stats()["publish_rpcs"] == before
        pub.flush(timeout_ms=30_000)
        assert load_server.stats()["publish_rpcs"] == before + 1


def test_publish_timeout_bounds_a_tasks_wait_for_acknowledgements(load_server):
    """Every RPC takes 3 s; publishTimeoutMs=1000 fails the task's flush
    naming the option (the default, 10 minutes, would have waited it out)."""
    import urllib.request

    from pyspark.sql.types import BinaryType, StructField, StructType

    from pubsub_go.errors import DeadlineExceededError
    from pubsub_go.spark.write.writer import make_writer

    req = urllib.request.Request(f"http://{load_server.http}/config", method="POST",
                                 data=json.dumps({"latency": "3s"}).encode())
    urllib.request.urlopen(req, timeout=10).close()
    writer = make_writer({"topicId": TOPIC, "emulatorHost": load_server.host_port, "publishTimeoutMs": "1000",
                          "publisherIdleMs": "0"},
                         StructType([StructField("payload", BinaryType())]), False, streaming=False)
    with pytest.raises(DeadlineExceededError, match="publishTimeoutMs=1000"):
        writer.write(iter([pa.record_batch({"payload": pa.array([b"late"])})]))


def _subscriber(server, **options: str) -> Subscriber:
    opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": server.host_port, "batchLogLocation": "/tmp/x",
                                **options})
    return Subscriber(subscriber_config(opts))


def test_streams_per_partition_opens_that_many_streams(load_server):
    # catchUpStreamsPerPartition=1: only streamsPerPartition counts, even on the backlog the server holds.
    with _subscriber(load_server, streamsPerPartition="3", catchUpStreamsPerPartition="1") as sub:
        sub.next_batch(max_rows=1, wait_ms=5000)
        assert _until(lambda: load_server.stats()["streams_active"] == 3, 30), load_server.stats()
        assert sub.stats()["streams"] == 3


def test_catch_up_streams_grow_a_subscriber_behind_its_backlog(load_server):
    """--backlog-at-start stamps every message with the server's start:
    older than the library's catch-up lag (1 s) once this has waited it out."""
    time.sleep(1.5)
    with _subscriber(load_server, catchUpStreamsPerPartition="5") as sub:
        sub.next_batch(max_rows=10, wait_ms=5000)
        assert _until(lambda: load_server.stats()["streams_active"] == 5, 30), load_server.stats()
        assert sub.stats()["streams"] == 5


@pytest.mark.parametrize("options, bound", [
    ({"maxOutstandingMessages": "300"}, 300),
    # A held message counts its 100-byte payload and more (ids, bookkeeping), so fewer than bytes/100 fit.
    ({"maxBytesPerPartition": "100000"}, 100_000 // 100),
    ({"maxWorkerMemoryBytes": str(16 << 20), "maxOutstandingMessages": "1000000"}, (16 << 20) // 4 // 100),
])
def test_flow_control_bounds_what_a_subscriber_holds(load_server, options, bound):
    """The server has endless messages and the subscriber acks none: once
    its flow control reports it full, it holds no more than the option's
    bound plus the one response a stream reads whole (--batch 20); the
    defaults (8,000 messages, 64 MiB) would hold far more."""
    with _subscriber(load_server, catchUpStreamsPerPartition="1", **options) as sub:
        sub.next_batch(max_rows=1, wait_ms=5000)
        assert _until(lambda: sub.stats()["flow_full_ms"] > 0, 30), sub.stats()
        time.sleep(0.5)  # room for more to arrive, were the bound not kept
        held = sub.stats()["held"]
    assert 0 < held <= bound + RESPONSE, (held, bound)


# -- what a task does with the messages it recorded -----------------------------

@pytest.fixture()
def backlog_server() -> Iterator:
    """A load server holding BACKLOG messages and nothing more."""
    from emulators import LoadServer
    from pubsub_go.client import admin

    server = LoadServer("--payload-bytes", "100", "--messages", str(BACKLOG), "--expiry-scan", "200ms")
    try:
        admin("create_topic", emulator_host=server.host_port, topic=TOPIC)
        admin("create_subscription", emulator_host=server.host_port, topic=TOPIC, subscription=SUB)
        yield server
    finally:
        server.stop()


BACKLOG = 50


def _run_task(server, tmp_path, **options: str) -> None:
    """One task of a micro-batch taking the whole backlog, as a Spark executor runs it."""
    from pubsub_go.spark.read.batchlog import BatchLog
    from pubsub_go.spark.read.partition import PubSubPartition
    from pubsub_go.spark.read.task import _pull_and_record

    # subscriberIdleMs=0: the subscriber closes with the task, so nothing but the task's own calls touch the leases.
    opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": server.host_port,
                                "batchLogLocation": str(tmp_path), "subscriberIdleMs": "0", **options})
    part = PubSubPartition(gen="g", batch=0, index=0, max_rows=BACKLOG, max_bytes=0, cutoff_us=0)
    rows = sum(b.num_rows for b in _pull_and_record(opts, part, BatchLog(str(tmp_path)), None))
    assert rows == BACKLOG


@pytest.mark.parametrize("ack_on_commit", ["true", "false"])
def test_ack_on_commit_false_acks_when_the_task_records_its_batch(backlog_server, tmp_path, ack_on_commit):
    """At most once (false): the task acks what it recorded, before Spark
    commits anything. By default it only hands the leases over (a modack
    to commitLeaseSeconds), and the driver acks at the commit."""
    _run_task(backlog_server, tmp_path, ackOnCommit=ack_on_commit)
    st = backlog_server.stats()
    if ack_on_commit == "false":
        assert backlog_server.settled(st) == BACKLOG and st["outstanding"] == 0, st
    else:
        assert backlog_server.settled(st) == 0 and st["modacks"] >= BACKLOG and st["outstanding"] == BACKLOG, st


def test_commit_lease_is_the_deadline_a_recorded_batch_is_left_with(backlog_server, tmp_path):
    """commitLeaseSeconds=10: the recorded messages' leases lapse 10 s after
    the task, as a driver that never commits would leave them; with the
    default (600 s) none would lapse within the minute this waits."""
    _run_task(backlog_server, tmp_path, commitLeaseSeconds="10")
    assert backlog_server.stats()["expired"] == 0
    assert _until(lambda: backlog_server.stats()["expired"] >= BACKLOG, 60), backlog_server.stats()
