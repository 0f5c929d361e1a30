"""Executor side: a subscriber outlives the task that opened it.

Opening a subscriber (a connection, StreamingPull streams) and closing it
(half-close, drain, nack what was prefetched) costs a few hundred
milliseconds per task, and every micro-batch would start from cold streams.
Spark reuses its Python workers, so a worker keeps its subscriber between
tasks: the next task of the same query finds it connected with its
reservoir already filled (bounded by its flow control, leases kept alive).
A subscriber no task has used for ``idle_s`` is closed by a background
thread, which nacks what it prefetched so that it is redelivered at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ...client import Subscriber, SubscriberConfig

# Different queries in one worker each keep one; beyond this the least
# recently used is closed.
MAX_IDLE = 4


class SubscriberPool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, tuple[Subscriber, float, float]] = {}  # key -> (sub, since, idle_s)
        self._reaper: threading.Thread | None = None

    @contextmanager
    def lease(self, config: SubscriberConfig, idle_s: float) -> Iterator[Subscriber]:
        """Yields a subscriber for config: an idle one if there is one.
        After a clean exit it goes back to the pool for idle_s seconds (0:
        closed at once); after an error it is closed, so a retry starts
        clean."""
        key = config.to_json()
        with self._lock:
            found = self._idle.pop(key, None)
        sub = found[0] if found else Subscriber(config)
        try:
            yield sub
        except BaseException:
            sub.close()
            raise
        if idle_s <= 0:
            sub.close()
            return
        evicted: list[Subscriber] = []
        with self._lock:
            self._idle[key] = (sub, time.monotonic(), idle_s)
            while len(self._idle) > MAX_IDLE:
                oldest = min(self._idle, key=lambda k: self._idle[k][1])
                evicted.append(self._idle.pop(oldest)[0])
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name="pubsub-go-idle-subscribers", daemon=True)
                self._reaper.start()
        for s in evicted:
            s.close()

    def _reap(self) -> None:
        while True:
            time.sleep(0.5)
            now = time.monotonic()
            with self._lock:
                expired = [k for k, (_, since, idle) in self._idle.items() if now - since >= idle]
                subs = [self._idle.pop(k)[0] for k in expired]
            for s in subs:
                try:
                    s.close()
                except Exception:  # nothing to report to: no task is running
                    pass


POOL = SubscriberPool()
