"""A Python worker that kept a subscriber half-closes it before it ends.

PySpark's forked workers end with os._exit (spark/worker_exit.py says
when), which skips finally: and atexit. A subscriber kept in such a worker
used to die with its StreamingPull streams cut, and Google's emulator keeps
leasing to a cut stream for good: every message published after that went
to nobody (issue 36). A process that keeps a subscriber in the source's pool
and then calls os._exit, as a PySpark worker does, must leave nothing
behind: Google's own client receives what is published next."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_os_exit_of_a_worker_that_kept_a_subscriber_leaves_no_stream_behind(google, emulator):
    topic, sub = google.topic(ack_deadline=10)
    worker = textwrap.dedent(f"""
        import os
        from pubsub_go.client import SubscriberConfig
        from pubsub_go.spark.read.task.subscriber_pool import POOL

        config = SubscriberConfig(subscription="{sub}", emulator_host="{emulator.host_port}", streams=2)
        with POOL.lease(config, idle_s=600) as s:  # kept ten minutes: only the exit can close it
            s.pull(max_rows=1, wait_ms=500)
        assert POOL.idle() == 1
        os._exit(0)
    """)
    _run_then_publish_reaches_googles_client(worker, google, topic, sub)


def test_os_exit_waits_for_a_close_another_thread_began(google, emulator):
    """The pool's reaper closes a stopped query's kept subscriber in its own
    thread, once it has taken it out of the pool; a worker that ends
    meanwhile (Spark lets go of a killed task's worker) must wait for that
    close, or it cuts the subscriber's streams mid-close. The close is held
    back a second here so that the exit surely comes during it, and the
    subscriber is not paused first (as one given back just before its
    query stopped is not)."""
    topic, sub = google.topic(ack_deadline=10)
    worker = textwrap.dedent(f"""
        import os, threading, time
        from pubsub_go.client import SubscriberConfig
        from pubsub_go.spark.read.task import subscriber_pool
        from pubsub_go.spark.read.task.subscriber_pool import POOL

        subscriber_pool.PAUSE_AFTER_S = 600
        stopped_at = []
        config = SubscriberConfig(subscription="{sub}", emulator_host="{emulator.host_port}", streams=2)
        with POOL.lease(config, idle_s=600, stopped=lambda: stopped_at[0] if stopped_at else None) as s:
            s.pull(max_rows=1, wait_ms=500)
        closing = threading.Event()
        close = s.close

        def held_back_close():
            closing.set()
            time.sleep(1.0)
            close()

        s.close = held_back_close
        stopped_at.append(time.time())  # the query stops: the reaper's next look closes its subscriber
        assert closing.wait(10), "the reaper did not close the stopped query's subscriber"
        os._exit(0)
    """)
    _run_then_publish_reaches_googles_client(worker, google, topic, sub)


def _run_then_publish_reaches_googles_client(worker: str, google, topic: str, sub: str) -> None:
    """Runs the worker script, then publishes 100 messages: each must reach
    Google's client, which it does not if the worker's exit cut a stream
    (Google's emulator keeps leasing to a cut stream)."""
    done = subprocess.run([sys.executable, "-c", worker], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    payloads = [b"after the worker ended %d" % i for i in range(100)]
    google.publish(topic, payloads)
    got = sorted(m.message.data for m in google.pull_all(sub, max_wait=5))
    assert got == sorted(payloads), f"{len(got)} of {len(payloads)} reached Google's client (leased to a cut stream?)"
