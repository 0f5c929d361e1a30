"""The driver's background threads (the committer, the lease keeper): a
daemon thread that sleeps on a condition until there is work or it is told
to stop. Spark calls the source on its critical path between two
micro-batches, so the RPCs these threads make never run in the caller."""

from __future__ import annotations

import threading
from collections.abc import Callable


class DriverThread:
    def __init__(self, name: str, loop: Callable[[], None]) -> None:
        self._stop = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=loop, name=name, daemon=True)

    def _start(self) -> None:
        """Called by a subclass once its own state is set up."""
        self._thread.start()

    def stop(self) -> None:
        """Ends the thread once the work asked for before is done."""
        with self._cv:
            self._stop = True
            self._cv.notify()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout=timeout)
