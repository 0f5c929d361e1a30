"""The driver-side source runner and SIGTERM.

PySpark runs a streaming Python source in a runner process whose main loop
calls `reader.stop()` in a `finally:`; when a query stops, Spark ends that
process with SIGTERM, whose default action kills it on the spot, so
`stop()` never runs (the last commit's acks, deleteSubscriptionOnStreamStop).
Turning SIGTERM into SystemExit in that process lets the `finally:` run."""

from __future__ import annotations

import signal
import threading
from types import FrameType

_installed = False


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    # Spark may send SIGTERM more than once; a second SystemExit would abort
    # stop() midway, so later ones are ignored (SIGKILL still ends us).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def stop_on_sigterm() -> None:
    """Installs the handler once, from the main thread (Python delivers
    signals there); elsewhere, or if someone else handles SIGTERM, it does
    nothing."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return
    signal.signal(signal.SIGTERM, _raise_exit)
    _installed = True
