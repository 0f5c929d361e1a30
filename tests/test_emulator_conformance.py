"""The embedded emulator against Google's official one: the same scenarios,
with Google's own Python client as the caller, the same outcomes.

Where the official emulator is known to differ from the service the
embedded one follows the service, and the test says so (docs/emulator.md).
Deadlines are kept short: redelivery is forced with nacks and 1 s modacks,
not by waiting out the 10 s minimum ack deadline."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import pytest

from google_peer import PROJECT, GoogleClients
from pubsub_go import Emulator


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    with Emulator() as emu:
        yield emu.host_port


@pytest.fixture(scope="module")
def embedded_google(embedded: str) -> GoogleClients:
    before = os.environ.get("PUBSUB_EMULATOR_HOST")
    clients = GoogleClients(embedded)
    if before is None:  # GoogleClients sets it for its own clients: leave the session's as it was
        os.environ.pop("PUBSUB_EMULATOR_HOST", None)
    else:
        os.environ["PUBSUB_EMULATOR_HOST"] = before
    return clients


@pytest.fixture(params=["official", "embedded"])
def g(request) -> GoogleClients:
    return request.getfixturevalue("google" if request.param == "official" else "embedded_google")


def names() -> tuple[str, str]:
    s = uuid.uuid4().hex[:10]
    return f"projects/{PROJECT}/topics/c-{s}", f"projects/{PROJECT}/subscriptions/c-{s}"


def make(g: GoogleClients, **sub: object) -> tuple[str, str]:
    topic, name = names()
    g.publisher.create_topic(name=topic, timeout=30)
    g.subscriber.create_subscription(request={"name": name, "topic": topic, **sub}, timeout=30)
    return topic, name


def pull_once(g: GoogleClients, sub: str, max_messages: int, timeout: float) -> list:
    """One Pull; empty when it times out (Google's emulator holds an empty
    Pull until its deadline)."""
    from google.api_core import exceptions

    timeout = max(timeout, 0.2)
    start = time.monotonic()
    try:
        return list(g.subscriber.pull(request={"subscription": sub, "max_messages": max_messages},
                                      timeout=timeout).received_messages)
    except exceptions.DeadlineExceeded:
        return []
    except exceptions.Cancelled:
        # The deadline passed on the server first: grpc-go ends the stream
        # with RST_STREAM(CANCEL), which the client reports as CANCELLED.
        # Any other cancel is a failure.
        if time.monotonic() - start < 0.9 * timeout:
            raise
        return []


def pull(g: GoogleClients, sub: str, want: int, within: float = 10.0) -> list:
    """Pulls until `want` messages came (or `within` s passed)."""
    out: list = []
    deadline = time.monotonic() + within
    while len(out) < want and time.monotonic() < deadline:
        out.extend(pull_once(g, sub, want - len(out), deadline - time.monotonic()))
    return out


def pull_none(g: GoogleClients, sub: str, wait: float = 1.0) -> list:
    """What a subscription delivers within `wait` s (expected: nothing)."""
    out: list = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        out.extend(pull_once(g, sub, 100, deadline - time.monotonic()))
    return out


def ack(g: GoogleClients, sub: str, msgs: list) -> None:
    g.subscriber.acknowledge(request={"subscription": sub, "ack_ids": [m.ack_id for m in msgs]})


def modack(g: GoogleClients, sub: str, msgs: list, secs: int) -> None:
    g.subscriber.modify_ack_deadline(request={"subscription": sub, "ack_ids": [m.ack_id for m in msgs],
                                              "ack_deadline_seconds": secs})


def data(msgs: list) -> list[bytes]:
    return [m.message.data for m in msgs]


def test_nack_redelivers_at_once_and_ack_ends_it(g):
    topic, sub = make(g)
    g.publish(topic, [b"a", b"b"])
    first = pull(g, sub, 2)
    assert sorted(data(first)) == [b"a", b"b"]
    modack(g, sub, [m for m in first if m.message.data == b"a"], 0)
    ack(g, sub, [m for m in first if m.message.data == b"b"])
    again = pull(g, sub, 1)
    assert data(again) == [b"a"]
    assert again[0].ack_id != [m for m in first if m.message.data == b"a"][0].ack_id
    ack(g, sub, again)
    assert pull_none(g, sub) == []


def test_a_message_comes_back_after_its_deadline(g):
    topic, sub = make(g)
    g.publish(topic, [b"late"])
    first = pull(g, sub, 1)
    modack(g, sub, first, 1)  # the lease now ends in 1 s, unacked
    t0 = time.monotonic()
    again = pull(g, sub, 1, within=15)
    assert data(again) == [b"late"], "not redelivered after its deadline"
    assert time.monotonic() - t0 >= 0.5, "redelivered before the deadline ran out"
    ack(g, sub, again)


def test_ordering_key_delivers_in_order_and_a_nack_resends_from_it(g):
    topic, sub = make(g, enable_message_ordering=True)
    g.publish(topic, [b"%d" % i for i in range(5)], ordering_keys=["k"] * 5)
    got = pull(g, sub, 5)
    assert data(got) == [b"0", b"1", b"2", b"3", b"4"]
    ack(g, sub, got[:2])
    modack(g, sub, got[2:], 0)  # nack 2, 3, 4: they come back in order
    again = pull(g, sub, 3)
    assert data(again) == [b"2", b"3", b"4"]
    ack(g, sub, again)


def test_filter_delivers_only_matching_messages(g, request):
    topic, sub = make(g, filter='attributes.kind = "keep" AND NOT attributes:skip')
    g.publish(topic, [b"1", b"2", b"3", b"4"],
              attributes=[{"kind": "keep"}, {"kind": "drop"}, {"kind": "keep", "skip": "y"}, {"kind": "keep"}])
    got = pull(g, sub, 4, within=1.0)
    if sorted(data(got)) == [b"1", b"2", b"3", b"4"] and request.node.callspec.params["g"] == "official":
        pytest.xfail("Google's emulator stores a subscription's filter but does not apply it; "
                     "the embedded one filters as the service does (docs/emulator.md)")
    assert sorted(data(got)) == [b"1", b"4"]
    ack(g, sub, got)
    assert pull_none(g, sub) == []


def test_dead_letter_after_max_attempts_with_delivery_attempts(g):
    dlq, dlq_sub = make(g)
    topic, sub = make(g, dead_letter_policy={"dead_letter_topic": dlq, "max_delivery_attempts": 5})
    g.publish(topic, [b"poison"])
    attempts = []
    for _ in range(5):
        got = pull(g, sub, 1)
        assert data(got) == [b"poison"]
        attempts.append(got[0].delivery_attempt)
        modack(g, sub, got, 0)
    assert attempts == [1, 2, 3, 4, 5]
    # Not delivered a sixth time. (Google's emulator forwards the message to
    # the dead-letter topic only on the next pull of its subscription; the
    # service and the embedded one forward it on the fifth nack.)
    assert pull_none(g, sub, 1.0) == []
    dead = pull(g, dlq_sub, 1, within=15)
    assert data(dead) == [b"poison"], "not forwarded to the dead-letter topic after 5 attempts"
    attrs = dead[0].message.attributes
    assert attrs["CloudPubSubDeadLetterSourceDeliveryCount"] == "5"
    assert attrs["CloudPubSubDeadLetterSourceSubscription"] == sub.rsplit("/", 1)[1]
    assert attrs["CloudPubSubDeadLetterSourceSubscriptionProject"] == PROJECT
    ack(g, dlq_sub, dead)
    assert pull_none(g, sub) == []


def test_seek_to_time_and_to_snapshot(g):
    from google.protobuf import timestamp_pb2

    topic, sub = make(g, retain_acked_messages=True)
    g.publish(topic, [b"x", b"y"])
    snap = sub.replace("/subscriptions/", "/snapshots/")
    g.subscriber.create_snapshot(request={"name": snap, "subscription": sub}, timeout=30)
    got = pull(g, sub, 2)
    ack(g, sub, got)
    assert pull_none(g, sub, 1.0) == []
    past = timestamp_pb2.Timestamp()
    past.FromSeconds(int(time.time()) - 600)
    g.subscriber.seek(request={"subscription": sub, "time": past}, timeout=30)
    back = pull(g, sub, 2)
    assert sorted(data(back)) == [b"x", b"y"], "seek to a past time (retain_acked_messages) did not bring them back"
    ack(g, sub, back)
    g.publish(topic, [b"z"])  # after the snapshot: in it too
    ack(g, sub, pull(g, sub, 1))
    g.subscriber.seek(request={"subscription": sub, "snapshot": snap}, timeout=30)
    restored = pull(g, sub, 3)
    assert sorted(data(restored)) == [b"x", b"y", b"z"]
    ack(g, sub, restored)
    g.subscriber.delete_snapshot(request={"snapshot": snap})


def test_exactly_once_ack_results(g):
    from google.cloud.pubsub_v1.subscriber import exceptions as sub_exc

    topic, sub = make(g, enable_exactly_once_delivery=True)
    g.publish(topic, [b"once"])
    results: dict[str, object] = {}
    seen: list = []

    def cb(msg) -> None:
        seen.append(msg)
        if len(seen) == 1:
            msg.nack()  # its ack id is stale from now on
            return
        try:
            results["current"] = msg.ack_with_response().result(timeout=30)
        except sub_exc.AcknowledgeError as e:
            results["current"] = e.error_code
        try:
            results["stale"] = seen[0].ack_with_response().result(timeout=30)
        except sub_exc.AcknowledgeError as e:
            results["stale"] = e.error_code

    fut = g.subscriber.subscribe(sub, cb)
    deadline = time.monotonic() + 30
    while "stale" not in results and time.monotonic() < deadline:
        time.sleep(0.05)
    fut.cancel()
    fut.result(timeout=30)
    assert len(seen) >= 2, "the nacked message was not redelivered"
    assert results.get("current") == sub_exc.AcknowledgeStatus.SUCCESS
    assert results.get("stale") == sub_exc.AcknowledgeStatus.INVALID_ACK_ID


AVRO = ('{"type": "record", "name": "Reading", "fields": [{"name": "id", "type": "long"}, '
        '{"name": "note", "type": ["null", "string"], "default": null}]}')


def schema_client(g: GoogleClients):
    from google.cloud import pubsub_v1

    before = os.environ.get("PUBSUB_EMULATOR_HOST")
    os.environ["PUBSUB_EMULATOR_HOST"] = g.host_port
    try:
        return pubsub_v1.SchemaServiceClient()
    finally:
        if before is None:
            os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        else:
            os.environ["PUBSUB_EMULATOR_HOST"] = before


def test_avro_schema_validates_publishes_and_tags_deliveries(g):
    from google.api_core import exceptions
    from google.pubsub_v1.types import Encoding, Schema

    sc = schema_client(g)
    schema = sc.create_schema(request={"parent": f"projects/{PROJECT}", "schema_id": f"r-{uuid.uuid4().hex[:10]}",
                                       "schema": Schema(type_=Schema.Type.AVRO, definition=AVRO)})
    topic, sub = names()
    g.publisher.create_topic(request={"name": topic, "schema_settings": {"schema": schema.name,
                                                                          "encoding": Encoding.JSON}})
    g.subscriber.create_subscription(request={"name": sub, "topic": topic})
    with pytest.raises(exceptions.InvalidArgument):
        g.publisher.publish(topic, b'{"id": "not a long"}').result(timeout=30)
    g.publish(topic, [b'{"id": 7, "note": {"string": "ok"}}'])
    got = pull(g, sub, 1)
    assert data(got) == [b'{"id": 7, "note": {"string": "ok"}}']
    attrs = got[0].message.attributes
    assert attrs["googclient_schemaname"] == schema.name
    assert attrs["googclient_schemaencoding"] == "JSON"
    assert attrs["googclient_schemarevisionid"] == schema.revision_id
    ack(g, sub, got)
