"""Options whose effect Spark takes no part in, observed at the Go
boundary and in the task and driver code Spark calls. Each library config
option is set to a value of its own (no two alike, none the default), and
the config the Python front end hands the library carries it in the field
the option table names, so a swap of two options in spark/read/options/source.py,
spark/write/options.py or subscriber_config.py fails here. Where the
effect shows outside the library, a server sees it: bench/loadserver counts
the Publish RPCs and StreamingPull streams a client makes, holds what a
subscriber has not acked and lets leases lapse; Google's emulator and the
decoders show the rest. tests/option_coverage.py lists each option's test."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

from pubsub_go.client import Publisher, Subscriber
from pubsub_go.spark.option_table import SINK, SOURCE, table
from pubsub_go.spark.read.options.source import FLOW_CONTROL_SHARE, SourceOptions
from pubsub_go.spark.read.task.subscriber_config import subscriber_config
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


def test_project_id_is_the_project_of_short_ids(monkeypatch):
    """projectId over the project the environment and the key would give."""
    from authpeers import ServiceAccount

    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "envproj")
    key = ServiceAccount(project="keyproj").json("http://127.0.0.1:1/token")
    src = SourceOptions.parse({"subscriptionId": "s", "projectId": "given", "credentialsJson": key,
                               "endpoint": "127.0.0.1:1", "batchLogLocation": "/tmp/x", "format": "json",
                               "deadLetterTopicId": "dlq", "startingSnapshot": "snap"})
    assert subscriber_config(src).subscription == "projects/given/subscriptions/s"
    assert src.decode is not None and src.decode.dead_letter_topic == "projects/given/topics/dlq"
    assert src.start.snapshot == "projects/given/snapshots/snap"
    sink = SinkOptions.parse({"topicId": "t", "projectId": "given", "credentialsJson": key,
                              "endpoint": "127.0.0.1:1"})
    assert sink.publisher_config().topic == "projects/given/topics/t"
    assert sink.route("other") == "projects/given/topics/other"  # a topic column's short id


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
    # A linger no run outlasts: only the size limits and the flush send a request.
    opts = SinkOptions.parse({"topicId": TOPIC, "emulatorHost": server.host_port, "lingerMs": "600000",
                              **sink_options})
    with Publisher(opts.publisher_config()) as pub:
        pub.publish(batch)
        assert pub.flush(timeout_ms=30_000)["published"] == batch.num_rows
    return server.stats()["publish_rpcs"] - before


def test_batch_limits_split_the_publish_requests(load_server):
    n, size = 60, 1000
    batch = pa.record_batch({"payload": pa.array([b"x" * size] * n)})
    # One call, one flush: by default a single request carries all 60.
    assert _publish_rpcs(load_server, {}, batch) == 1
    assert _publish_rpcs(load_server, {"batchMaxMessages": "7"}, batch) == math.ceil(n / 7)
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


def _set_latency(server, latency: str) -> None:
    """Every unary RPC of the load server takes this long from now on."""
    import urllib.request

    req = urllib.request.Request(f"http://{server.http}/config", method="POST",
                                 data=json.dumps({"latency": latency}).encode())
    urllib.request.urlopen(req, timeout=10).close()


def test_max_in_flight_bytes_holds_publishes_back_until_acknowledged(load_server):
    """maxInFlightBytes=1500 with 1,000-byte messages, one per request: one
    request at a time, so 10 take at least 10 round trips of the server's
    300 ms; by default (128 MiB) they overlap (about 1.5 s here)."""
    n, latency_s = 10, 0.3
    opts = SinkOptions.parse({"topicId": TOPIC, "emulatorHost": load_server.host_port, "batchMaxMessages": "1",
                              "maxInFlightBytes": "1500"})
    with Publisher(opts.publisher_config()) as pub:
        _set_latency(load_server, f"{int(latency_s * 1000)}ms")
        start = time.monotonic()
        pub.publish(pa.record_batch({"payload": pa.array([b"x" * 1000] * n)}))
        assert pub.flush(timeout_ms=60_000)["published"] == n
        took = time.monotonic() - start
    assert took >= n * latency_s, f"{n} requests of {latency_s} s each took {took:.2f} s: they overlapped"


def test_retry_timeout_bounds_how_long_a_failing_request_is_retried():
    """Every Publish fails UNAVAILABLE (transient): with retryTimeoutMs=1000
    the flush fails with it; by default (300 s) the publisher would still
    be retrying when the flush's own 30 s ran out (DEADLINE_EXCEEDED)."""
    from emulators import LoadServer
    from pubsub_go.client import admin
    from pubsub_go.errors import UnavailableError

    server = LoadServer("--publish-error-rate", "1", "--publish-error-code", "UNAVAILABLE")
    try:
        admin("create_topic", emulator_host=server.host_port, topic=TOPIC)
        opts = SinkOptions.parse({"topicId": TOPIC, "emulatorHost": server.host_port, "retryTimeoutMs": "1000"})
        with Publisher(opts.publisher_config()) as pub:
            pub.publish(pa.record_batch({"payload": pa.array([b"x"])}))
            with pytest.raises(UnavailableError):
                pub.flush(timeout_ms=30_000)
        assert server.stats()["injected_errors"] >= 2, "the failed request was not retried"
    finally:
        server.stop()


class _CountingProxy:
    """Forwards TCP connections to upstream, counting the bytes clients send."""

    def __init__(self, upstream: str) -> None:
        import socket
        import threading

        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.sent = 0
        self._lock = threading.Lock()
        self._srv = socket.create_server(("127.0.0.1", 0))
        self.host_port = f"127.0.0.1:{self._srv.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self._srv.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False), daemon=True).start()

    def _pipe(self, src, dst, count: bool) -> None:
        try:
            while data := src.recv(65536):
                if count:
                    with self._lock:
                        self.sent += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._srv.close()


@pytest.mark.parametrize("threshold, compressed", [("1000", True), ("2000000", False)])
def test_compression_gzips_requests_from_its_threshold(google, threshold, compressed):
    """compression=gzip: a request of 1 MB of one letter crosses the wire
    in a few KB once it is at least compressionBytesThreshold (the default
    240 would compress it too, and compression=none never would)."""
    topic, _ = google.topic()
    proxy = _CountingProxy(google.host_port)
    try:
        opts = SinkOptions.parse({"topicId": topic, "emulatorHost": proxy.host_port, "compression": "gzip",
                                  "compressionBytesThreshold": threshold})
        with Publisher(opts.publisher_config()) as pub:
            before = proxy.sent
            pub.publish(pa.record_batch({"payload": pa.array([b"a" * 1_000_000])}))
            assert pub.flush(timeout_ms=30_000)["published"] == 1
            sent = proxy.sent - before
    finally:
        proxy.close()
    assert (sent < 100_000) is compressed, f"{sent} bytes sent for a 1 MB message"


def test_publish_timeout_bounds_a_tasks_wait_for_acknowledgements(load_server):
    """Every RPC takes 3 s; publishTimeoutMs=1000 fails the task's flush
    naming the option (the default, 10 minutes, would have waited it out)."""

    from pyspark.sql.types import BinaryType, StructField, StructType

    from pubsub_go.errors import DeadlineExceededError
    from pubsub_go.spark.write.writer import make_writer

    _set_latency(load_server, "3s")
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


def _run_task(server, tmp_path, **options: str) -> tuple:
    """One task of a micro-batch taking the whole backlog, as a Spark
    executor runs it (its batch log where batchLogLocation says)."""
    from pubsub_go.spark.read.task.partition import PubSubPartition
    from pubsub_go.spark.read.task.run import read_partition

    # subscriberIdleMs=0: the subscriber closes with the task, so nothing but the task's own calls touch the leases.
    opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": server.host_port,
                                "batchLogLocation": str(tmp_path), "subscriberIdleMs": "0", **options})
    part = PubSubPartition(gen="g", batch=0, index=0, max_rows=BACKLOG)
    assert sum(b.num_rows for b in read_partition(opts, part)) == BACKLOG
    return opts, part


def test_the_batch_log_is_where_batch_log_location_says(backlog_server, tmp_path):
    from pubsub_go.spark.read.batchlog import BatchLog

    _run_task(backlog_server, tmp_path / "home", batchLogLocation=str(tmp_path / "chosen"))
    entry = BatchLog(str(tmp_path / "chosen")).read("g", 0, 0)
    assert entry is not None and entry.stats["rows"] == BACKLOG
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("idle_ms, kept", [("0", False), ("600000", True)])
def test_subscriber_idle_ms_is_how_long_a_worker_keeps_a_tasks_subscriber(backlog_server, tmp_path, idle_ms, kept):
    """0 closes it with the task; the streaming default (2 s) and longer keep it for the next task."""
    from pubsub_go.spark.read.task.subscriber_pool import POOL

    opts, part = _run_task(backlog_server, tmp_path, subscriberIdleMs=idle_ms)
    config = subscriber_config(opts, part=part)
    assert POOL.keeps(config) is kept
    with POOL.lease(config, 0):  # takes the kept one, if any, and closes it on return
        pass
    assert not POOL.keeps(config)


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


# -- schema mode: what the driver derives and the library decodes ---------------

def _decoder(options: dict[str, str], schema=None):
    """The decoder a task opens (its subscriber's, the same config) for
    source options: the schema given, or derived on the driver as a query
    without .schema() derives it."""
    from pubsub_go.decode_api import NativeDecoder
    from pubsub_go.spark.read.options.schema_plan import SchemaPlan, derive_schema

    opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": "127.0.0.1:1", "batchLogLocation": "/tmp/x",
                                **options})
    assert opts.decode is not None
    plan = SchemaPlan.build(opts.decode, schema if schema is not None else derive_schema(opts.decode))
    return NativeDecoder(plan.decoder_config())


def test_decoder_options_reach_the_decoder():
    """decoderOptions={"timezone": "+02:00"}: a zone-less time is read at
    +02:00; without it, at UTC."""
    import datetime as dt

    from pyspark.sql.types import StructField, StructType, TimestampType

    schema = StructType([StructField("ts", TimestampType())])
    payloads = pa.array([b'{"ts": "2024-06-01T12:00:00"}'])
    utc = dt.datetime(2024, 6, 1, 12, tzinfo=dt.timezone.utc)
    with _decoder({"format": "json"}, schema) as dec:
        assert dec.decode(payloads).column("ts").to_pylist() == [utc]
    with _decoder({"format": "json", "decoderOptions": '{"timezone": "+02:00"}'}, schema) as dec:
        assert dec.decode(payloads).column("ts").to_pylist() == [utc - dt.timedelta(hours=2)]


@pytest.mark.parametrize("encoding", ["binary", "json"])
@pytest.mark.parametrize("given_as", ["protobufDescriptorSet", "protobufDescriptorFile"])
def test_protobuf_descriptor_and_encoding_options_decode_as_googles_parser_wrote(tmp_path, given_as, encoding):
    """The message type from either descriptor option, payloads in the
    encoding protobufEncoding names: the rows equal those of the binary
    payloads decoded by pubsub_go.decode (which tests/test_protobuf.py holds
    to Google's parser). JSON read as binary would fail every row."""
    import base64

    from google.protobuf import json_format

    import pubsub_go
    from protobuf_vectors import DESCRIPTOR_SET, events, normalize

    msgs = events(8)
    binary = pa.array([m.SerializeToString() for m in msgs])
    ref = pubsub_go.decode(binary, format="protobuf", protobuf_descriptor_set=DESCRIPTOR_SET,
                           protobuf_message="pgtest.Event", on_error="fail")
    if given_as == "protobufDescriptorFile":
        (tmp_path / "event.desc").write_bytes(DESCRIPTOR_SET)
        descriptor = str(tmp_path / "event.desc")
    else:
        descriptor = base64.b64encode(DESCRIPTOR_SET).decode()
    payloads = binary if encoding == "binary" else pa.array([json_format.MessageToJson(m).encode() for m in msgs])
    with _decoder({"format": "protobuf", "protobufMessage": "pgtest.Event", given_as: descriptor,
                   "protobufEncoding": encoding}) as dec:
        got = dec.decode(payloads)
    assert got.column("__decode_error").null_count == len(msgs), got.column("__decode_error").to_pylist()
    assert [normalize(r) for r in got.select(ref.schema.names).to_pylist()] == [normalize(r) for r in ref.to_pylist()]


RECURSIVE = 'syntax = "proto3"; package r; message Node { string name = 1; Node child = 2; }'


def test_protobuf_recursive_depth_is_how_deep_the_derived_columns_recur():
    """Each step of protobufRecursiveDepth nests Node.child once more in the
    columns the driver derives (Spark's recursive.fields.max.depth)."""
    from pyspark.sql.types import StructType

    from pubsub_go.spark.read.options.schema_plan import derive_schema

    def levels(depth: int) -> int:
        opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": "127.0.0.1:1", "batchLogLocation": "/x",
                                    "format": "protobuf", "protobufSource": RECURSIVE, "protobufMessage": "r.Node",
                                    "protobufRecursiveDepth": str(depth)})
        assert opts.decode is not None
        t, n = derive_schema(opts.decode), 0
        while isinstance(t, StructType) and "child" in t.names:
            t, n = t["child"].dataType, n + 1
        return n

    got = [levels(d) for d in (1, 2, 3)]
    assert got[1] == got[0] + 1 and got[2] == got[1] + 1, got


def test_decoder_engine_picks_what_runs_the_module(tmp_path):
    """wazero: no wasmtime library in the config; auto (the default) takes
    the wasmtime package's where it is installed, as here."""
    from pyspark.sql.types import StringType, StructField, StructType

    from pubsub_go import wasmtime_library
    from pubsub_go.spark.read.options.schema_plan import SchemaPlan

    assert wasmtime_library.find(), "the wasmtime package is part of the test environment"
    module = tmp_path / "d.wasm"
    module.write_bytes(b"\0asm\x01\0\0\0")

    def sent(**options: str) -> dict:
        opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": "127.0.0.1:1",
                                    "batchLogLocation": "/tmp/x", "decoder": str(module), **options})
        assert opts.decode is not None
        plan = SchemaPlan.build(opts.decode, StructType([StructField("v", StringType())]))
        return json.loads(plan.decoder_config().to_json())

    assert sent()["wasmtime_library"] == wasmtime_library.find()
    assert "wasmtime_library" not in sent(decoderEngine="wazero")


def test_quiet_period_is_how_long_an_empty_backlog_must_stay_quiet(google, tmp_path):
    """An AvailableNow task on an empty subscription ends drained once its
    subscriber has been quiet for quietPeriodMs: 8 s here, longer than the
    5 s default, and the quiet time it ended on says so."""
    from pubsub_go.spark.read.batchlog import BatchLog
    from pubsub_go.spark.read.task.partition import PubSubPartition
    from pubsub_go.spark.read.task.run import read_partition

    _, sub = google.topic()
    opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": google.host_port, "subscriberIdleMs": "0",
                                "batchLogLocation": str(tmp_path), "quietPeriodMs": "8000",
                                "maxBatchDurationMs": "60000"})
    part = PubSubPartition(gen="g", batch=0, index=0, max_rows=100, cutoff_us=time.time_ns() // 1000)
    assert sum(b.num_rows for b in read_partition(opts, part)) == 0
    stats = BatchLog(str(tmp_path)).read("g", 0, 0).stats
    assert stats["drained"] and stats["quiet_ms"] >= 8000, stats


def test_num_partitions_and_max_records_plan_the_tasks_of_a_micro_batch(google, tmp_path):
    """What the driver hands Spark for a micro-batch without a trigger limit:
    numPartitions tasks (the default: this machine's cores), each taking up
    to maxRecordsPerPartition rows."""
    import os

    from pubsub_go.spark.read.driver.offsets import BatchOffset
    from pubsub_go.spark.read.driver.stream import PubSubStreamReader
    from pubsub_go.spark.read.options.schema_plan import RAW_SPARK_SCHEMA

    _, sub = google.topic()
    reader = PubSubStreamReader({"subscriptionId": sub, "emulatorHost": google.host_port,
                                 "batchLogLocation": str(tmp_path), "numPartitions": str((os.cpu_count() or 1) + 3),
                                 "maxRecordsPerPartition": "1234"}, RAW_SPARK_SCHEMA)
    try:
        start = BatchOffset.initial()
        end = BatchOffset(gen=start.gen, batch=1, run="r")
        parts = reader.partitions(start.to_json(), end.to_json())
    finally:
        reader.stop()
    assert len(parts) == (os.cpu_count() or 1) + 3
    assert {p.spec.max_rows for p in parts} == {1234}


def test_sink_timestamp_column_is_the_event_time_it_publishes(google):
    """timestampAttribute with timestampColumn=when: the attribute carries
    the `when` column's time (epoch ms); the default column, event_time,
    is not in the input."""
    import datetime as dt

    from pyspark.sql.types import BinaryType, StructField, StructType, TimestampType

    from pubsub_go.spark.write.writer import make_writer

    topic, sub = google.topic()
    schema = StructType([StructField("payload", BinaryType()), StructField("when", TimestampType())])
    writer = make_writer({"topicId": topic, "emulatorHost": google.host_port, "timestampAttribute": "ts_ms",
                          "timestampColumn": "when"}, schema, False, streaming=False)
    when = dt.datetime(2026, 1, 1, 0, 0, 1, 234000, tzinfo=dt.timezone.utc)
    ts = pa.timestamp("us", tz="UTC")
    writer.write(iter([pa.record_batch({"payload": pa.array([b"a"]), "when": pa.array([when], ts)})]))
    got = google.pull_all(sub, max_wait=10)
    assert [m.message.attributes["ts_ms"] for m in got] == [str(int(when.timestamp() * 1000))]


def test_id_attribute_window_is_how_long_a_delivered_id_is_remembered(tmp_path):
    """An id delivered 2 minutes ago (its ids file dated so, no waiting):
    forgotten with idAttributeWindowSeconds=60, remembered with 180 and the
    default (600), as one delivered 30 s ago is with 60."""
    import os

    from pubsub_go.spark.read.task.id_window import DIR, IdFilter

    def window(**options: str):
        opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": "127.0.0.1:1", "batchLogLocation": "/x",
                                    "idAttribute": "uid", **options})
        assert opts.id_window is not None
        return opts.id_window

    attrs = pa.array([[("uid", "u1")]], pa.map_(pa.string(), pa.string()))
    first = IdFilter(window(), str(tmp_path))
    assert first.keep(attrs) is None
    first.record("g", 0, 0)
    [ids_file] = (tmp_path / DIR).glob("*.arrow")

    def remembered(age_s: int, **options: str) -> bool:
        os.utime(ids_file, (time.time() - age_s,) * 2)
        mask = IdFilter(window(**options), str(tmp_path)).keep(attrs)
        return mask is not None and mask.to_pylist() == [False]

    assert remembered(30, idAttributeWindowSeconds="60")
    assert remembered(120, idAttributeWindowSeconds="180")
    assert remembered(120)
    assert not remembered(120, idAttributeWindowSeconds="60")


def test_max_batch_duration_is_how_long_a_task_reads_on(tmp_path):
    """An AvailableNow task reads on until its backlog is quiet or its time
    is spent; messages arriving every 20 ms keep it from going quiet, so
    it ends when maxBatchDurationMs (12 s here, 10 s by default) is spent."""
    from emulators import LoadServer
    from pubsub_go.client import admin
    from pubsub_go.spark.read.batchlog import BatchLog
    from pubsub_go.spark.read.task.partition import PubSubPartition
    from pubsub_go.spark.read.task.run import read_partition

    server = LoadServer("--payload-bytes", "100", "--rate", "50")
    try:
        admin("create_topic", emulator_host=server.host_port, topic=TOPIC)
        admin("create_subscription", emulator_host=server.host_port, topic=TOPIC, subscription=SUB)
        opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": server.host_port, "subscriberIdleMs": "0",
                                    "batchLogLocation": str(tmp_path), "maxBatchDurationMs": "12000"})
        # The cut-off an hour ahead: every message arriving counts, none is late.
        part = PubSubPartition(gen="g", batch=0, index=0, max_rows=1_000_000,
                               cutoff_us=time.time_ns() // 1000 + 3600 * 10**6)
        start = time.monotonic()
        rows = sum(b.num_rows for b in read_partition(opts, part))
        took = time.monotonic() - start
    finally:
        server.stop()
    stats = BatchLog(str(tmp_path)).read("g", 0, 0).stats
    assert rows > 0 and not stats["drained"], stats
    assert took >= 12, f"the task ended after {took:.1f} s, before its 12 s"


def test_schema_revision_pins_the_columns_of_a_topic_schema(google):
    """schemaFrom=topic takes the newest revision's fields as the columns;
    schemaRevision pins an older one."""
    import uuid

    from google.cloud.pubsub import SchemaServiceClient
    from google.pubsub_v1.types import Schema

    from pubsub_go.spark.read.driver.topic_schema import fetch_topic_schema
    from pubsub_go.spark.read.options.schema_plan import derive_schema

    schemas = SchemaServiceClient()  # on Google's emulator: the google fixture set PUBSUB_EMULATOR_HOST
    v1 = {"type": "record", "name": "Item", "fields": [{"name": "id", "type": "long"}]}
    v2 = {"type": "record", "name": "Item", "fields": [*v1["fields"],
                                                        {"name": "extra", "type": ["null", "string"], "default": None}]}
    name = f"projects/{google.project}/schemas/sch-{uuid.uuid4().hex[:10]}"
    first = schemas.create_schema(request={"parent": f"projects/{google.project}", "schema_id": name.rsplit("/")[-1],
                                           "schema": Schema(type_=Schema.Type.AVRO, definition=json.dumps(v1))})
    schemas.commit_schema(request={"name": name, "schema": Schema(name=name, type_=Schema.Type.AVRO,
                                                                  definition=json.dumps(v2))})
    topic = f"projects/{google.project}/topics/ts-{uuid.uuid4().hex[:10]}"
    google.publisher.create_topic(request={"name": topic, "schema_settings": {"schema": name, "encoding": "BINARY"}})
    sub = topic.replace("/topics/", "/subscriptions/")
    google.subscriber.create_subscription(request={"name": sub, "topic": topic})

    def columns(**options: str) -> list[str]:
        opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": google.host_port,
                                    "batchLogLocation": "/tmp/x", "schemaFrom": "topic", **options})
        assert opts.decode is not None
        return [n for n in derive_schema(opts.decode, fetch_topic_schema(opts)).names if n not in
                ("message_id", "publish_time", "attributes")]

    assert columns() == ["id", "extra"]
    assert columns(schemaRevision=first.revision_id) == ["id"]


def test_max_wait_time_is_how_long_a_streaming_task_waits_for_more(backlog_server, tmp_path):
    """A streaming task that took the whole backlog ends at the first wait
    for more that runs out: maxWaitTimeMs=3000 makes that at least 3 s (by
    default 20 ms)."""
    from pubsub_go.spark.read.task.partition import PubSubPartition
    from pubsub_go.spark.read.task.run import read_partition

    opts = SourceOptions.parse({"subscriptionId": SUB, "emulatorHost": backlog_server.host_port,
                                "batchLogLocation": str(tmp_path), "subscriberIdleMs": "0", "maxWaitTimeMs": "3000"})
    part = PubSubPartition(gen="g", batch=0, index=0, max_rows=10 * BACKLOG)
    start = time.monotonic()
    assert sum(b.num_rows for b in read_partition(opts, part)) == BACKLOG
    took = time.monotonic() - start
    assert took >= 3, f"the task ended {took:.2f} s after it started"
