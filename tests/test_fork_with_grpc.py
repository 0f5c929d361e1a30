"""The suite starts processes (Spark's JVM gateway, emulators) from a process
where Google's client has gRPC channels busy. With gRPC's fork support on,
its fork handler killed about one such child in twenty between fork and exec,
or left it hung there (grpc/grpc#43055), and a Spark session then failed to
start with JAVA_GATEWAY_EXITED; conftest.py turns the support off."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import psutil

from google_peer import GoogleClients

LAUNCHES = 300  # at one in twenty, all 300 reaching exec by chance is ~2e-7
# A launch takes ~10 ms; 120 s is 40 times the whole loop's quiet time, room for a loaded machine.
LAUNCH_BOUND_S = 120.0


def test_children_started_while_googles_client_is_busy_reach_exec(google: GoogleClients):
    topic, _ = google.topic()
    stop = threading.Event()
    published: list[str] = []
    failed: list[tuple[int, int]] = []
    launched: list[int] = []

    def busy() -> None:
        while not stop.is_set():
            published.append(google.publisher.publish(topic, b"x" * 100).result(timeout=30))

    def launch() -> None:
        for i in range(LAUNCHES):
            # As PySpark's launch_gateway starts the JVM: a preexec_fn and a stdin pipe.
            p = subprocess.Popen(["/bin/true"], preexec_fn=lambda: None, stdin=subprocess.PIPE)
            p.stdin.close()
            if p.wait(timeout=30) != 0:
                failed.append((i, p.returncode))
            launched.append(i)

    started = time.time()
    t = threading.Thread(target=busy, daemon=True)
    t.start()
    try:
        lt = threading.Thread(target=launch, daemon=True)
        lt.start()
        lt.join(LAUNCH_BOUND_S)
        if lt.is_alive():
            # A child hung before exec still runs this interpreter: killed, it frees Popen.
            for c in psutil.Process().children():
                try:
                    if c.exe() == sys.executable and c.create_time() >= started - 1:
                        c.kill()
                except psutil.Error:
                    pass
            lt.join(30)
    finally:
        stop.set()
        t.join(timeout=30)
    assert published, "Google's client published nothing while the children started: the test tested nothing"
    assert len(launched) == LAUNCHES and not failed, (
        f"of {LAUNCHES} children started while gRPC was busy, {len(launched)} were reaped within "
        f"{LAUNCH_BOUND_S:.0f} s and {len(failed)} died before exec (launch, exit code): {failed[:10]}")
