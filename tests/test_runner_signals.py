"""Spark ends the driver-side source runner with SIGTERM; stop_on_sigterm
makes that run the runner's `finally: reader.stop()` (the query-level test
is test_lifecycle's deleteSubscriptionOnStreamStop)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

RUNNER = r"""
import sys, time
from pubsub_go.spark.read.driver.runner_signals import stop_on_sigterm
stop_on_sigterm()
try:
    print("ready", flush=True)
    time.sleep(60)   # the runner waiting on its socket
finally:
    time.sleep(0.5)  # stop() at work when the second signal comes
    print("stopped", flush=True)
"""


def test_sigterm_runs_the_finally_block():
    p = subprocess.Popen([sys.executable, "-c", RUNNER], stdout=subprocess.PIPE, text=True, cwd="/tmp")
    try:
        assert p.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        p.send_signal(signal.SIGTERM)  # Spark may send it twice: stop() must not be cut short
        out, _ = p.communicate(timeout=20)
        assert out.strip() == "stopped" and time.monotonic() - t0 < 5, out
        assert p.returncode == 128 + signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
