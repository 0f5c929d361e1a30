"""The executor-side subscriber pool (subscriberIdleMs > 0): a worker's
subscriber is reused by the next task, and once idle it is closed, which
nacks what it prefetched so that another consumer gets it at once."""

from __future__ import annotations

import time

from pubsub_go.client import SubscriberConfig
from pubsub_go.spark.read.subscriber_pool import SubscriberPool


def test_idle_subscriber_is_reused_then_closed_and_its_prefetch_nacked(google, emulator):
    topic, sub_path = google.topic(ack_deadline=60)
    ids = set(google.publish(topic, [b"p%d" % i for i in range(30)]))
    pool = SubscriberPool()
    config = SubscriberConfig(subscription=sub_path, emulator_host=emulator.host_port, batch_size=5)

    with pool.lease(config, idle_s=2.0) as first:
        b, a = first.next_batch(5, 20_000)
        assert b.num_rows >= 1
        first.ack(a)
        handed = set(b.column("message_id").to_pylist())
    # Meanwhile it prefetches (leased): another consumer sees none of it.
    deadline = time.monotonic() + 20
    while first.stats()["held"] < len(ids) - len(handed) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert first.stats()["held"] == len(ids) - len(handed), first.stats()

    with pool.lease(config, idle_s=2.0) as second:
        assert second is first, "the next task must get the worker's open subscriber"

    # Unused for 2 s: closed by the reaper, its prefetched messages nacked,
    # so they come back long before their 60 s lease would run out.
    deadline = time.monotonic() + 10
    while getattr(first, "_h", 0) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not getattr(first, "_h", 0), "the idle subscriber was not closed"
    back = {m.message.message_id for m in google.pull_all(sub_path, max_wait=10)}
    assert back == ids - handed


def test_a_failed_task_closes_its_subscriber(google, emulator):
    topic, sub_path = google.topic(ack_deadline=60)
    google.publish(topic, [b"f"])
    pool = SubscriberPool()
    config = SubscriberConfig(subscription=sub_path, emulator_host=emulator.host_port)
    try:
        with pool.lease(config, idle_s=60.0) as sub:
            raise RuntimeError("task failed")
    except RuntimeError:
        pass
    assert not getattr(sub, "_h", 0), "a failed task's subscriber must not be kept"
    with pool.lease(config, idle_s=0.0) as other:
        assert other is not sub
    assert not getattr(other, "_h", 0), "idle_s=0 closes the subscriber at once"
