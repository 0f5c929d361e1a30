"""Foundation: the native data plane through its Python binding, against
Google's official emulator, with Google's own Python client as the peer."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import pubsub_go
from pubsub_go.client import Subscriber

RAW_FIELDS = ["message_id", "publish_time", "attributes", "payload", "ordering_key", "delivery_attempt"]


def drain(sub: Subscriber, want: int, timeout: float = 30.0, wait_ms: int = 500) -> tuple[pa.Table, pa.Array]:
    """Pulls until `want` rows arrived (bounded)."""
    batches, acks = [], []
    got = 0
    deadline = time.monotonic() + timeout
    while got < want and time.monotonic() < deadline:
        b, a = sub.next_batch(wait_ms=wait_ms)
        if b.num_rows:
            batches.append(b)
            acks.append(a)
            got += b.num_rows
    assert got >= want, f"pulled {got} of {want} messages within {timeout}s"
    return pa.Table.from_batches(batches), pa.chunked_array(acks, type=pa.string()).combine_chunks()


def test_fields_equal_what_googles_client_published_and_sees(google, emulator):
    topic, sub_a = google.topic()
    sub_b = sub_a.replace("/s-", "/b-")
    google.subscriber.create_subscription(request={"name": sub_b, "topic": topic}, timeout=30)
    n = 50
    payloads = [bytes([i % 256]) * (i + 1) + b"\x00\xff" for i in range(n)]
    attrs = [{"k": f"v{i}", "unicode": "é✓"} if i % 3 else {} for i in range(n)]
    keys = [f"key-{i % 4}" if i % 2 else "" for i in range(n)]
    ids = google.publish(topic, payloads, attrs, keys)

    with Subscriber(subscription=sub_a, emulator_host=emulator.host_port) as sub:
        table, ack_ids = drain(sub, n)
        sub.ack(ack_ids)
    assert table.schema.names == RAW_FIELDS
    assert table.schema.field("publish_time").type == pa.timestamp("us", tz="UTC")
    assert ack_ids.type == pa.string() and len(ack_ids) == n
    reference = {m.message.message_id: m.message for m in google.pull_all(sub_b)}
    assert len(reference) == n
    rows = table.to_pylist()
    assert sorted(r["message_id"] for r in rows) == sorted(ids)
    for r in rows:
        ref = reference[r["message_id"]]
        i = ids.index(r["message_id"])
        assert r["payload"] == payloads[i] == ref.data
        assert dict(r["attributes"]) == attrs[i] == dict(ref.attributes)
        assert (r["ordering_key"] or "") == keys[i] == ref.ordering_key
        ref_time = ref.publish_time  # DatetimeWithNanoseconds, UTC
        want = dt.datetime(ref_time.year, ref_time.month, ref_time.day, ref_time.hour, ref_time.minute,
                           ref_time.second, ref_time.microsecond, tzinfo=dt.timezone.utc)
        assert r["publish_time"] == want, f"publish_time {r['publish_time']} != {want} (to the microsecond)"
        assert r["delivery_attempt"] is None  # no dead-letter policy


def test_acked_messages_are_not_redelivered_after_the_deadline(google, emulator):
    topic, sub_path = google.topic(ack_deadline=10)
    google.publish(topic, [b"m%d" % i for i in range(20)])
    with Subscriber(subscription=sub_path, emulator_host=emulator.host_port, ack_deadline_seconds=10) as sub:
        _, acks = drain(sub, 20)
        sub.ack(acks)
        assert sub.stats()["acked"] == 20
    time.sleep(12)  # past the subscription's 10 s ack deadline
    assert google.pull_all(sub_path, max_wait=3) == []


def test_nacked_messages_are_redelivered_promptly(google, emulator):
    topic, sub_path = google.topic(ack_deadline=60)
    ids = google.publish(topic, [b"n%d" % i for i in range(10)])
    with Subscriber(subscription=sub_path, emulator_host=emulator.host_port) as sub:
        _, acks = drain(sub, 10)
        sub.nack(acks)
        t0 = time.monotonic()
        again, acks2 = drain(sub, 10, timeout=15)
        assert time.monotonic() - t0 < 15
        assert sorted(again.column("message_id").to_pylist()) == sorted(ids)
        sub.ack(acks2)
        assert sub.stats()["redeliveries"] >= 10


def test_leases_are_extended_past_the_subscription_deadline(google, emulator):
    topic, sub_path = google.topic(ack_deadline=10)
    google.publish(topic, [b"lease%d" % i for i in range(5)])
    with Subscriber(subscription=sub_path, emulator_host=emulator.host_port, ack_deadline_seconds=10) as sub:
        _, acks = drain(sub, 5)
        # Held 25 s > 10 s deadline: a competing consumer must get nothing.
        stolen = google.pull_all(sub_path, max_wait=25, ack=False)
        assert stolen == [], f"{len(stolen)} messages were redelivered while their leases were being extended"
        assert sub.stats()["extended"] >= 5
        sub.ack(acks)


def test_close_nacks_held_but_never_handed_out(google, emulator):
    topic, sub_path = google.topic(ack_deadline=60)
    ids = google.publish(topic, [b"c%d" % i for i in range(40)])
    sub = Subscriber(subscription=sub_path, emulator_host=emulator.host_port, max_outstanding_messages=100)
    # Wait until the stream has buffered everything, then take only 10.
    deadline = time.monotonic() + 20
    while sub.stats()["pulled"] < 40 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sub.stats()["pulled"] == 40
    handed, _ = sub.next_batch(max_rows=10, wait_ms=1000)
    assert handed.num_rows == 10
    sub.close()
    back = google.pull_all(sub_path, max_wait=5)
    back_ids = sorted(m.message.message_id for m in back)
    handed_ids = set(handed.column("message_id").to_pylist())
    assert back_ids == sorted(set(ids) - handed_ids), "close() must nack exactly the never-handed-out messages"


def test_unknown_subscription_is_not_found(emulator):
    sub = "projects/pubsub-go-test/subscriptions/does-not-exist"
    with pytest.raises(pubsub_go.NotFoundError, match="NOT_FOUND") as e:
        Subscriber(subscription=sub, emulator_host=emulator.host_port)
    assert "does-not-exist" in str(e.value)


def test_unreachable_endpoint_fails_after_bounded_retries():
    from emulators import free_port

    t0 = time.monotonic()
    with pytest.raises(pubsub_go.UnavailableError, match="UNAVAILABLE"):
        Subscriber(subscription="projects/p/subscriptions/s", emulator_host=f"127.0.0.1:{free_port()}",
                   open_timeout_ms=3000)
    assert time.monotonic() - t0 < 20


@pytest.mark.parametrize("extra,needle", [
    ({"batchsize": 10}, "batchsize"),
    ({"streams": "four"}, "streams"),
    ({"ack_deadline_seconds": 5000}, "ack_deadline_seconds"),
])
def test_malformed_config_names_the_key(emulator, extra, needle):
    import json

    from pubsub_go.client import SubscriberConfig

    class RawConfig(SubscriberConfig):
        """Sends keys and values the typed config cannot hold."""

        def to_json(self) -> str:
            return json.dumps({**json.loads(super().to_json()), **extra})

    cfg = RawConfig(subscription="projects/p/subscriptions/s", emulator_host=emulator.host_port)
    with pytest.raises(pubsub_go.InvalidArgumentError, match="INVALID_ARGUMENT") as e:
        Subscriber(cfg)
    assert needle in str(e.value)
    assert e.value.kind == "invalid_argument" and e.value.code == 3


@pytest.fixture(scope="session")
def debug_library(tmp_path_factory) -> Path:
    """The test build of the library (tests/native_debug.py), once per session."""
    import native_debug

    return native_debug.build(tmp_path_factory.mktemp("debug-lib"))


def test_go_panic_becomes_a_python_exception(debug_library):
    import native_debug

    code = (
        "import pubsub_go\n"
        "from pubsub_go.client import version\n"
        "from native_debug import debug_panic\n"
        "try:\n"
        "    debug_panic()\n"
        "except pubsub_go.InternalError as e:\n"
        "    print('raised', e.kind, e.code, 'panic' in str(e))\n"
        "print('abi', version()['abi'])  # the process and the library are still fine\n"
    )
    out = native_debug.run(debug_library, code)
    assert out.returncode == 0 and out.stdout.split("\n")[:2] == ["raised panic 13 True", "abi 6"], \
        out.stdout + out.stderr


def test_the_release_library_and_header_carry_no_test_hooks():
    """pg_debug_* exist only in the -tags pubsubgo_debug build."""
    from pubsub_go import _native

    syms = subprocess.run(["nm", "-D", "--defined-only", str(_native.library_path())], capture_output=True,
                          text=True, check=True).stdout
    assert " pg_version" in syms and "pg_debug_" not in syms
    assert "pg_debug_" not in _native._header_path().read_text()
    with pytest.raises(AttributeError, match="pg_debug_panic"):
        _native.lib().pg_debug_panic  # noqa: B018 - not even declared


def test_import_does_not_load_the_go_runtime():
    code = (
        "import pubsub_go, pyspark_pubsub_go, pubsub_go.client\n"
        "import pubsub_go.spark.read.driver.stream, pubsub_go.spark.write.writer\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libpubsubgo' not in maps, 'import loaded the Go runtime'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def _use_after_fork(setup: str, call: str, teardown: str = "") -> str:
    """Runs setup in a fresh interpreter, forks, and runs call in the child,
    which must fail with ForkedProcessError; returns the parent's stdout,
    "child 0" when it did."""
    code = (
        "import os, sys, pubsub_go\n" + setup
        + "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        f"        {call}\n"
        "    except pubsub_go.ForkedProcessError as e:\n"
        "        os._exit(0 if 'fork' in str(e) else 3)\n"
        "    os._exit(4)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print('child', os.waitstatus_to_exitcode(status))\n" + teardown
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return out.stdout + out.stderr


def test_use_after_fork_is_a_clear_error():
    out = _use_after_fork("from pubsub_go.client import version\nversion()\n", "version()")
    assert "child 0" in out, out


def test_subscriber_used_after_fork_is_a_clear_error(google, emulator):
    # next_batch keeps its native entry point after the first call; the
    # fork check must still run on every call.
    topic, sub_path = google.topic()
    google.publish(topic, [b"f%d" % i for i in range(3)])
    setup = (
        "from pubsub_go.client import Subscriber\n"
        f"sub = Subscriber(subscription={sub_path!r}, emulator_host={emulator.host_port!r})\n"
        "b, ids = sub.next_batch(1, 20000)\n"
        "b, ids = sub.next_batch(1, 20000)\n"
    )
    out = _use_after_fork(setup, "sub.next_batch(1, 100)", "sub.close()\n")
    assert "child 0" in out, out


def test_library_links_nothing_but_libc():
    from pubsub_go._native import library_path

    out = subprocess.run(["ldd", str(library_path())], capture_output=True, text=True, check=True).stdout
    libs = [line.split()[0] for line in out.strip().splitlines()]
    allowed = ("linux-vdso", "libc.so", "ld-linux", "/lib64/ld-linux", "libpthread", "libdl", "libm.so")
    assert all(lib.startswith(allowed) or "ld-linux" in lib for lib in libs), libs


def test_embedded_emulator_serves_googles_client():
    """`python -m pubsub_go emulator` works as PUBSUB_EMULATOR_HOST for Google's client."""
    from emulators import free_port, wait_for_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pubsub_go", "emulator", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_for_port("127.0.0.1", port, 60), "embedded emulator did not listen"
        code = (
            "import os\n"
            f"os.environ['PUBSUB_EMULATOR_HOST']='127.0.0.1:{port}'\n"
            "from google.cloud import pubsub_v1\n"
            "p = pubsub_v1.PublisherClient(); s = pubsub_v1.SubscriberClient()\n"
            "p.create_topic(name='projects/e/topics/t')\n"
            "s.create_subscription(name='projects/e/subscriptions/s', topic='projects/e/topics/t')\n"
            "p.publish('projects/e/topics/t', b'hello', a='1').result(timeout=30)\n"
            "r = s.pull(request={'subscription': 'projects/e/subscriptions/s', 'max_messages': 10}, timeout=30)\n"
            "print(r.received_messages[0].message.data.decode(), r.received_messages[0].message.attributes['a'])\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.stdout.strip() == "hello 1", out.stdout + out.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_ten_thousand_batches_keep_rss_flat(debug_library):
    """Import and release 10,000 batches: no leak across the C boundary
    (live C memory back to 0, RSS flat), in a process that loads the test
    build of the library for its C-memory count. The load comes from
    bench/loadserver (the emulators are too slow)."""
    import native_debug

    out = native_debug.run(debug_library, _TEN_THOUSAND_BATCHES, timeout=600)
    assert out.returncode == 0 and "ok" in out.stdout.split(), out.stdout + out.stderr


_TEN_THOUSAND_BATCHES = """
import psutil

from emulators import LoadServer
from native_debug import debug_c_bytes
from pubsub_go.client import Subscriber, admin

server = LoadServer("--payload-bytes", "512", "--attributes", "2")
try:
    admin("create_topic", emulator_host=server.host_port, topic="projects/m/topics/t")
    admin("create_subscription", emulator_host=server.host_port, topic="projects/m/topics/t",
          subscription="projects/m/subscriptions/s")
    proc = psutil.Process()
    with Subscriber(subscription="projects/m/subscriptions/s", emulator_host=server.host_port,
                    max_outstanding_messages=2000) as sub:
        rss_warm = 0
        rows = 0
        for i in range(10_000):
            b, acks = sub.next_batch(max_rows=100, wait_ms=5000)
            assert b.num_rows > 0, f"batch {i} came back empty"
            rows += b.num_rows
            sub.ack(acks)
            del b, acks
            if i == 1000:
                rss_warm = proc.memory_info().rss
        rss_end = proc.memory_info().rss
    assert debug_c_bytes() == 0, "exported Arrow buffers were not all released"
    growth = (rss_end - rss_warm) / 2**20
    assert growth < 32, f"RSS grew {growth:.1f} MiB over 9,000 batches ({rows} rows)"
    st = server.stats()
    assert LoadServer.settled(st) >= rows and st["ack_misses"] == 0, st
    print("ok")
finally:
    server.stop()
"""


def test_acks_on_an_exactly_once_subscription_report_their_results(emulator, google):
    """The official emulator accepts exactly-once delivery subscriptions (it
    does not return per-ack-id failures: those are covered by the Go tests
    with a fault-injecting server)."""
    from pubsub_go import Subscriber, admin

    topic, _ = google.topic()
    sub = topic.replace("/topics/", "/subscriptions/") + "-eod"
    admin("create_subscription", emulator_host=emulator.host_port, topic=topic, subscription=sub,
          enable_exactly_once_delivery=True, ack_deadline_seconds=10)
    assert admin("get_subscription", emulator_host=emulator.host_port,
                 subscription=sub)["enable_exactly_once_delivery"] is True
    google.publish(topic, [b"e%d" % i for i in range(30)])
    got = 0
    with Subscriber(subscription=sub, emulator_host=emulator.host_port) as s:
        deadline = time.monotonic() + 30
        while got < 30 and time.monotonic() < deadline:
            batch, ids = s.next_batch(max_rows=100, wait_ms=300)
            if len(ids):
                assert s.ack(ids) == {"done": len(ids), "rejected": {}}
                got += len(ids)
        assert s.stats()["acked"] == 30 and s.stats()["ack_rejected"] == 0
    assert got == 30
    time.sleep(11)  # past the deadline: nothing comes back
    assert google.pull_all(sub, max_wait=2) == []


def test_acks_rejected_like_exactly_once_delivery_are_never_counted_as_acked():
    """bench/loadserver refuses every ack id the way an exactly-once
    subscription refuses expired ones (ErrorInfo metadata per ack id)."""
    from emulators import LoadServer
    from pubsub_go.client import admin

    server = LoadServer("--ack-reject-rate", "1", "--messages", "40")
    try:
        admin("create_topic", emulator_host=server.host_port, topic="projects/m/topics/t")
        admin("create_subscription", emulator_host=server.host_port, topic="projects/m/topics/t",
              subscription="projects/m/subscriptions/s")
        with Subscriber(subscription="projects/m/subscriptions/s", emulator_host=server.host_port) as sub:
            b, acks = sub.next_batch(max_rows=40, wait_ms=5000)
            assert b.num_rows > 0
            res = sub.ack(acks)
            assert res == {"done": 0, "rejected": {"PERMANENT_FAILURE_INVALID_ACK_ID": b.num_rows}}, res
            st = sub.stats()
            assert st["acked"] == 0 and st["ack_rejected"] == b.num_rows
        assert server.stats()["acks"] == 0
    finally:
        server.stop()


def test_a_full_subscriber_says_how_long_it_could_not_receive(google, emulator):
    """A subscriber holding all it may hold pulls nothing more, as it would
    from an empty subscription; flow_full_ms and blocked_ms tell the two
    apart, and stop once it can receive again."""
    topic, sub_path = google.topic(ack_deadline=60)
    google.publish(topic, [b"p%d" % i for i in range(5)])
    with Subscriber(subscription=sub_path, emulator_host=emulator.host_port, max_outstanding_messages=5) as sub:
        deadline = time.monotonic() + 20
        while sub.stats()["pulled"] < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        before = sub.stats()
        assert before["pulled"] == 5, before
        time.sleep(0.5)
        full = sub.stats()
        assert full["flow_full_ms"] - before["flow_full_ms"] >= 490, (before, full)
        assert full["blocked_ms"] >= 500 and full["quiet_ms"] == 0, full
        _, acks = drain(sub, 5)
        sub.ack(acks)
        freed = sub.stats()
        deadline = time.monotonic() + 10
        while sub.stats()["blocked_ms"] and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        later = sub.stats()
    assert later["blocked_ms"] == 0 and later["flow_full_ms"] == freed["flow_full_ms"], (freed, later)


def test_a_subscriber_full_past_its_prefetch_lease_repeats_and_loses_nothing(google, emulator):
    """A full subscriber stops reading its streams while the server has
    leased more into them (go/internal/subscriber/pipe.go). Paused past
    what those messages' 10 s lease allows, a stream must half-close and
    give them back: reading them late would hand out copies the emulator
    redelivers too (duplicates), and cutting the stream without a
    half-close would leave them leased to nobody (missing)."""
    topic, sub_path = google.topic(ack_deadline=60)
    n = 200
    ids = google.publish(topic, [b"p%d" % i for i in range(n)])
    seen: list[str] = []
    with Subscriber(subscription=sub_path, emulator_host=emulator.host_port, max_outstanding_messages=20) as sub:
        deadline = time.monotonic() + 20
        while sub.stats()["pulled"] < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sub.stats()["pulled"] >= 20, "the subscriber never filled"
        time.sleep(12)  # past the 10 s lease of what waits in the stream
        deadline = time.monotonic() + 90
        while len(set(seen)) < n and time.monotonic() < deadline:
            b, a = sub.next_batch(max_rows=7, wait_ms=200)  # a slow consumer: the stream keeps pausing
            seen += b.column("message_id").to_pylist()
            if len(a):
                sub.ack(a)
        # Anything handed out twice would come within a lease.
        end = time.monotonic() + 12
        while time.monotonic() < end:
            b, a = sub.next_batch(wait_ms=500)
            seen += b.column("message_id").to_pylist()
            if len(a):
                sub.ack(a)
        st = sub.stats()
    twice = len(seen) - len(set(seen))
    assert sorted(set(seen)) == sorted(ids) and twice == 0, (
        f"{len(set(seen))} of {n} messages handed out, {twice} more than once; stats {st}")
    assert st["streams_restarted"] >= 1, f"no stream was retired after a 12 s pause; stats {st}"
