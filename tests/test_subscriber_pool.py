"""The executor-side subscriber pool (subscriberIdleMs > 0): a worker's
subscriber is reused by the next task, and once idle it is closed, which
nacks what it prefetched so that another consumer gets it at once."""

from __future__ import annotations

import time

from pubsub_go.client import Subscriber, SubscriberConfig
from pubsub_go.spark.read.task.subscriber_pool import SubscriberPool


def _open(sub: Subscriber) -> bool:
    """Whether sub still holds its native handle (close() zeroes it). Read
    directly: were the attribute renamed, this fails rather than reading
    every subscriber as closed."""
    return sub._h != 0


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
    while _open(first) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _open(first), "the idle subscriber was not closed"
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
    assert not _open(sub), "a failed task's subscriber must not be kept"
    with pool.lease(config, idle_s=0.0) as other:
        assert other is not sub
    assert not _open(other), "idle_s=0 closes the subscriber at once"



def test_idle_counts_from_the_querys_last_activity():
    """A subscriber whose task ended is kept while another task of the query
    is active (a micro-batch lasts as long as its slowest task; closing it
    meanwhile nacked its whole prefetch), and idle_s counts from that
    activity; never longer than idle_s + max_wait_s."""
    from pubsub_go.spark.read.task.subscriber_pool import _Idle

    last: list[float | None] = [None]

    def idle(activity=lambda: last[0]) -> _Idle:
        return _Idle(sub=None, since=100.0, idle_s=2.0, activity=activity, max_wait_s=10.0)  # type: ignore[arg-type]

    e = idle()
    assert not e.expired(101.9), "within idle_s of its own return"
    assert e.expired(102.0), "no activity known: idle_s alone decides"
    last[0] = 101.5  # a sibling published its entry after this task ended
    assert not e.expired(103.4)
    assert e.expired(103.5)
    last[0] = 111.0  # a task of the query kept writing
    assert not e.expired(111.9)
    assert e.expired(112.0), "kept past idle_s + max_wait_s"

    def unknown() -> float | None:
        raise OSError("store unreachable")

    assert idle(unknown).expired(102.0), "when activity() cannot tell, idle_s alone decides"


def test_a_stopped_query_closes_what_its_tasks_kept():
    """The driver's stop marks the query stopped: a subscriber its task gave
    back before that, or shortly after (a task the stop cut short that
    still finished), is closed at the reaper's next look, not idle_s later.
    A stop long before its return (a mark an earlier run left) does not
    count."""
    from pubsub_go.spark.read.task.subscriber_pool import LATE_RETURN_S, _Idle

    stopped: list[float | None] = [None]

    def idle(stop=lambda: stopped[0]) -> _Idle:
        return _Idle(sub=None, since=100.0, idle_s=60.0, activity=lambda: None,  # type: ignore[arg-type]
                     max_wait_s=10.0, stopped=stop)

    assert not idle().expired(100.5), "not stopped: idle_s decides"
    stopped[0] = 100.0 - LATE_RETURN_S - 1  # a mark an earlier run left, long before this task gave it back
    assert not idle().expired(100.5)
    stopped[0] = 100.2
    assert idle().expired(100.5), "the query stopped after its task gave it back"
    stopped[0] = 99.0
    assert idle().expired(100.5), "the task gave it back just after the stop: the stopped run's"

    def unknown() -> float | None:
        raise OSError("store unreachable")

    assert not idle(unknown).expired(100.5), "when stopped() cannot tell, idle_s decides"


def test_subscriber_kept_while_the_query_is_active(google, emulator):
    topic, sub_path = google.topic(ack_deadline=60)
    google.publish(topic, [b"s%d" % i for i in range(10)])
    pool = SubscriberPool()
    config = SubscriberConfig(subscription=sub_path, emulator_host=emulator.host_port)
    sibling_runs = [True]
    quiet_since: list[float] = []

    def activity() -> float:
        if sibling_runs[0]:
            return time.time()
        return quiet_since[0]

    with pool.lease(config, idle_s=1.0, activity=activity, max_wait_s=60.0) as sub:
        pass
    time.sleep(3.0)  # three times idle_s, while a sibling task runs
    assert _open(sub), "closed while another task of the query still ran"
    quiet_since.append(time.time())
    sibling_runs[0] = False
    deadline = time.monotonic() + 10
    while _open(sub) and time.monotonic() < deadline:
        time.sleep(0.1)
    closed_after = time.time() - quiet_since[0]
    assert not _open(sub), "not closed once the query was quiet for idle_s"
    # Not before idle_s from the quiet (the reaper closed it before the loop
    # saw it); the loop's 10 s is the bound above, and far from max_wait_s
    # (60 s), the other way it could have expired.
    assert closed_after >= 1.0, closed_after


def test_a_new_querys_first_task_closes_a_stopped_querys_subscriber_first(google, emulator, monkeypatch):
    """A query started right after another stopped: its first task in a
    worker closes the stopped query's kept subscriber before opening its
    own, so the worker never holds both prefetches, and the old prefetch
    goes back to the server at once (the reaper alone would look up to
    REAP_PERIOD_S later)."""
    from pubsub_go.spark.read.task import subscriber_pool

    monkeypatch.setattr(subscriber_pool, "REAP_PERIOD_S", 3600.0)  # only the new task can close it
    topic_a, sub_a = google.topic(ack_deadline=60)
    ids_a = set(google.publish(topic_a, [b"a%d" % i for i in range(20)]))
    topic_b, sub_b = google.topic(ack_deadline=60)
    pool = SubscriberPool()
    stopped: list[float | None] = [None]
    config_a = SubscriberConfig(subscription=sub_a, emulator_host=emulator.host_port)
    with pool.lease(config_a, idle_s=600.0, stopped=lambda: stopped[0]) as old:
        deadline = time.monotonic() + 20
        while old.stats()["held"] < len(ids_a) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert old.stats()["held"] == len(ids_a), old.stats()
    stopped[0] = time.time()  # the driver's stop mark
    assert _open(old), "closed before the next query's task came"

    config_b = SubscriberConfig(subscription=sub_b, emulator_host=emulator.host_port)
    with pool.lease(config_b, idle_s=0.0) as new:
        assert new is not old
        assert not _open(old), "the stopped query's subscriber was still open beside the new one"
    back = {m.message.message_id for m in google.pull_all(sub_a, max_wait=10)}
    assert back == ids_a, "the stopped query's prefetch was not nacked"


def _paused(pool: SubscriberPool, config: SubscriberConfig, bound_s: float = 10.0) -> bool:
    """Waits until pool keeps config's subscriber paused."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        with pool._lock:
            e = pool._idle.get(config.to_json())
            if e is not None and e.paused:
                return True
        time.sleep(0.05)
    return False


def test_an_unused_subscriber_pauses_and_its_next_task_resumes_it(google, emulator, monkeypatch):
    """Paused at the reaper's first look once unused for PAUSE_AFTER_S (so
    within PAUSE_AFTER_S + REAP_PERIOD_S of its return, by construction:
    the looks are made here, at chosen times, not raced against the
    clock); the next task resumes it and receives what came meanwhile."""
    from pubsub_go.spark.read.task import subscriber_pool
    from pubsub_go.spark.read.task.subscriber_pool import PAUSE_AFTER_S

    monkeypatch.setattr(subscriber_pool, "REAP_PERIOD_S", 3600.0)  # only the looks below pause it
    topic, sub_path = google.topic(ack_deadline=60)
    pool = SubscriberPool()
    config = SubscriberConfig(subscription=sub_path, emulator_host=emulator.host_port)
    with pool.lease(config, idle_s=600.0) as sub:
        pass
    kept = pool._idle[config.to_json()]
    pool._pause_unused(kept.since + PAUSE_AFTER_S * 0.9)
    assert not kept.paused, "paused before PAUSE_AFTER_S unused"
    pool._pause_unused(kept.since + PAUSE_AFTER_S)
    assert _paused(pool, config), "an unused kept subscriber was not paused"
    ids = set(google.publish(topic, [b"r%d" % i for i in range(5)]))
    time.sleep(2.0)
    assert sub.stats()["pulled"] == 0, "a paused subscriber received"
    with pool.lease(config, idle_s=600.0) as again:
        assert again is sub
        got: set[str] = set()
        deadline = time.monotonic() + 20
        while got != ids and time.monotonic() < deadline:
            b, a = again.next_batch(5, 1000)
            again.ack(a)
            got |= set(b.column("message_id").to_pylist())
        assert got == ids, "the resumed subscriber did not receive what was published while it was paused"
    pool.close_all()


_KILLED_WORKER = """
import sys, time
from pubsub_go.client import SubscriberConfig
from pubsub_go.spark.read.task.subscriber_pool import SubscriberPool
pool = SubscriberPool()
config = SubscriberConfig(subscription=sys.argv[1], emulator_host=sys.argv[2])
with pool.lease(config, idle_s=600.0):
    pass
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    with pool._lock:
        if all(e.paused for e in pool._idle.values()):
            break
    time.sleep(0.05)
print("kept and paused" if all(e.paused for e in pool._idle.values()) else "not paused", flush=True)
time.sleep(600)
"""


def test_a_worker_killed_while_keeping_its_subscriber_loses_nothing(google, emulator):
    """Spark ends a worker whose task it killed with SIGKILL. Google's
    emulator keeps leasing to a stream cut that way (a plain subscriber
    SIGKILLed with its stream open: a later one received 900 of 1,000 in
    40 s), so a kept subscriber pauses its streams first: after the kill
    a new subscriber receives everything published."""
    import os
    import signal
    import subprocess
    import sys

    from pubsub_go.client import Subscriber

    topic, sub_path = google.topic(ack_deadline=10)
    worker = subprocess.Popen([sys.executable, "-c", _KILLED_WORKER, sub_path, emulator.host_port],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "kept and paused"
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    ids = set(google.publish(topic, [b"k%d" % i for i in range(1000)]))
    got: set[str] = set()
    with Subscriber(subscription=sub_path, emulator_host=emulator.host_port) as reader:
        deadline = time.monotonic() + 30
        while got != ids and time.monotonic() < deadline:
            b, a = reader.next_batch(1000, 1000)
            reader.ack(a)
            got |= set(b.column("message_id").to_pylist())
    assert got == ids, f"after the kill a new subscriber received {len(got)} of {len(ids)}"
