"""A subscriber's close waits for a slow server to end its half-closed
streams instead of cutting them.

Close half-closes each StreamingPull stream and waits for the server to end
it; past the subscriber's drain bound it cancels the call, an HTTP/2
RST_STREAM, which Google's emulator logs (OfficialEmulator.cut_call_times)
and keeps leasing to for good. A server slowed by a loaded machine is not a
dead one: while the bound was 2 s, stopped queries on a loaded 2-core
machine cut streams now and then (tests/test_restart_in_one_app.py), and
only a live client's cancel shows as a cut (a killed process's dropped
connection does not). Here a private Google emulator is frozen
(SIGSTOP) for FREEZE_S while a subscriber holding prefetched messages
closes, then thawed: the close must wait, cut nothing, and nack what it
held so that Google's own client receives all of it at once."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from emulators import OfficialEmulator
from google_peer import GoogleClients
from pubsub_go import Subscriber
from pubsub_go.client import SubscriberConfig

N = 200
# Longer than the old 2 s drain bound, well inside the present 10 s
# (go/internal/subscriber/config.go, drainTimeout): 7 s left for the thawed
# emulator to answer the half-closes on a loaded machine.
FREEZE_S = 3.0


@pytest.fixture
def frozen_able():
    """A Google emulator of this test's own: freezing the session's would
    stall whatever else uses it."""
    emu = OfficialEmulator()
    try:
        yield emu
    finally:
        os.killpg(emu.proc.pid, signal.SIGCONT)  # never leave it stopped
        emu.stop()


def test_close_waits_for_a_frozen_server_to_end_its_streams(frozen_able, monkeypatch):
    emu = frozen_able
    # GoogleClients points PUBSUB_EMULATOR_HOST at this emulator, which is gone after the test: later tests take
    # the session's emulator from it (Google's schema client), so it is restored after.
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", os.environ.get("PUBSUB_EMULATOR_HOST", ""))
    google = GoogleClients(emu.host_port)
    topic, sub_name = google.topic(ack_deadline=60)
    google.publish(topic, [f"m{i}".encode() for i in range(N)])
    sub = Subscriber(SubscriberConfig(subscription=sub_name, emulator_host=emu.host_port, streams=2))
    deadline = time.monotonic() + 60
    while sub.stats()["held"] < N:
        assert time.monotonic() < deadline, f"prefetched {sub.stats()['held']} of {N} in 60 s"
        time.sleep(0.05)
    cuts_before = len(emu.cut_call_times())

    os.killpg(emu.proc.pid, signal.SIGSTOP)
    closed = threading.Event()
    errors: list[BaseException] = []

    def close() -> None:
        try:
            sub.close()
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            closed.set()

    threading.Thread(target=close, daemon=True).start()
    time.sleep(FREEZE_S)
    still_closing = not closed.is_set()
    os.killpg(emu.proc.pid, signal.SIGCONT)
    assert closed.wait(60), "close did not return within 60 s of the emulator's thaw"
    assert not errors, errors
    # The close sent its half-closes while the emulator was frozen, so it
    # could not have returned before the thaw without cancelling them.
    assert still_closing, "close returned while the emulator was frozen"
    time.sleep(1.0)  # the emulator logs a cut as it reads the RST_STREAM
    cuts = emu.cut_call_times()[cuts_before:]
    assert not cuts, f"the close cut {len(cuts)} calls (their log times: {cuts})"

    # Nacked at the close: Google's client gets every message well before
    # their 60 s ack deadline could have brought them back.
    got = {m.message.data for m in google.pull_all(sub_name, max_wait=30, until=lambda ms: len(ms) >= N)}
    assert len(got) == N, f"Google's client received {len(got)} of {N} after the close"
