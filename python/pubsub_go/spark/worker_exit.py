"""Executor side: what a Python worker must do before its process ends.

PySpark's daemon forks the Python workers, and a forked worker ends with
``os._exit``: when Spark closes its connection (a task killed because its
query stopped, even after the task's Python part had finished, while the
JVM still wrote its output), when the task fails, or at shutdown. That skips
``atexit`` and every ``finally:``, so a subscriber the worker kept between
tasks would die with its StreamingPull streams open: cut, not half-closed.
Pub/Sub then redelivers what those streams held only after its ack deadline,
and Google's emulator never forgets such a stream: it keeps leasing new
messages to it, which nobody receives until the emulator restarts (so a
query restarted in the same application would read a fraction of its
backlog, then nothing).

So the first pool that keeps something native in a worker registers a
closer here, and this module wraps ``os._exit`` in that process (only
there: the driver and planning workers never lease) to run the closers,
bounded by CLOSE_BOUND_S, before the process ends. ``atexit`` covers the
non-forking worker mode. A SIGKILL still skips all of it; the source keeps
its tasks from being killed mid-pull by ending them when their query stops
(spark/read/task/pull.py).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable
from typing import NoReturn

# How long the closers may delay the process's end, in all: longer than
# the subscriber's own bound on waiting for the server to end its
# half-closed streams (go/internal/subscriber/config.go, drainTimeout,
# 10 s), so that the exit does not cut a stream a slow server (a loaded
# machine) has yet to end. It usually ends within a round trip. Spark does
# not wait for a worker it let go; nothing is waiting on this one's output
# any more.
CLOSE_BOUND_S = 12.0

_lock = threading.Lock()
_closers: list[Callable[[float], None]] = []
_real_exit: Callable[[int], NoReturn] | None = None
_pid = 0  # the process that registered: a forked child holds none of its native handles
_ran = False


def register(closer: Callable[[float], None]) -> None:
    """Runs closer(bound_s) before this process ends (once per closer)."""
    global _real_exit, _pid
    with _lock:
        if closer in _closers:
            return
        _closers.append(closer)
        _pid = os.getpid()
        if _real_exit is None:
            _real_exit = os._exit
            os._exit = _exit_after_closing  # type: ignore[assignment]
            atexit.register(run_closers)


def run_closers() -> None:
    """Runs every closer once, together, within CLOSE_BOUND_S."""
    global _ran
    with _lock:
        if _ran or os.getpid() != _pid:
            return
        _ran = True
        closers = list(_closers)
    threads = [threading.Thread(target=_run_one, args=(c,), daemon=True) for c in closers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(CLOSE_BOUND_S)


def _run_one(closer: Callable[[float], None]) -> None:
    try:
        closer(CLOSE_BOUND_S)
    except Exception:  # noqa: S110 - the process is ending; nothing can report it
        pass


def _exit_after_closing(code: int) -> NoReturn:
    try:
        run_closers()
    finally:
        assert _real_exit is not None
        _real_exit(code)
