"""Executor side: a subscriber outlives the task that opened it.

Opening a subscriber (a connection, StreamingPull streams) and closing it
(half-close, drain, nack what was prefetched) costs a few hundred
milliseconds per task, and every micro-batch would start from cold streams.
Spark reuses its Python workers, so a worker keeps its subscriber between
tasks: the next task of the same query finds it connected with its
reservoir already filled (bounded by its flow control, leases kept alive).
A subscriber no task has used for ``idle_s`` is closed by a background
thread, which nacks what it prefetched so that it is redelivered at once.

Idle is counted from the query's last activity (``activity``: when the
query last wrote or removed a batch-log entry), not from this worker's task
end: the next micro-batch starts only after this one's slowest task, and
Spark hands tasks to its idle workers in turn, so a worker may sit out a
micro-batch while the query is busy; closing then would nack its whole
prefetch (bench/tools/latency.py counts nacks before the stop). Once the
query is quiet, idle_s runs out as before: the end-of-backlog decision
counts on a pooled subscriber's prefetch coming back within the quiet
period (quietPeriodMs 5 s > subscriberIdleMs 2 s plus the commit before the
batch; docs/source.md, "End of backlog").

A query that stops says so in the batch log (the driver's stop writes
``<gen>/_stopped``, which the next run's driver removes; ``stopped`` reads
it). A subscriber returned before that (or up to LATE_RETURN_S after) is
closed at the reaper's next look, not idle_s later: nothing will take it,
and its prefetch goes back to the server at once for other consumers
(tests/test_query_stop.py). A task that opens a new subscriber first closes
what has expired, so a query started right after another stopped does not
hold both queries' prefetch in one worker.

A kept subscriber pauses once unused for PAUSE_AFTER_S: its streams
half-close, what it holds stays held (leases extended) for the next task,
which resumes it. Spark ends a worker whose task it killed (a query
stopping) with SIGKILL, which cuts the worker's streams, and Google's
emulator keeps leasing new messages to a cut stream, where nobody receives
them (go/internal/subscriber/pause.go). A paused subscriber has no stream.

Spark may end the worker at any moment a task runs in it, with os._exit:
the pool registers close_all with worker_exit, so every subscriber in the
worker half-closes its streams and nacks its prefetch first, including one
whose close another thread has begun (the reaper's, a discarded task's):
out of the pool, it is still the worker's until its close returns, and an
exit that did not wait for it cut its streams mid-drain. So every
subscriber the pool opened is idle, in use or closing until its close
returns, and close_all waits for all three. A task that saw its query stop,
or its subscriber unable to receive for too long (pull.py), asks for the
subscriber to be closed when it comes back (discard) instead of kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ....client import Subscriber, SubscriberConfig
from ... import worker_exit

# Different queries in one worker each keep one; beyond this the least
# recently used is closed.
MAX_IDLE = 4

# How often the reaper looks at the idle subscribers (seconds).
REAP_PERIOD_S = 0.5

# A kept subscriber unused this long pauses its streams (see above): with
# the reaper's period, within 1 s of its task's end, well before Spark ends
# a worker whose task it killed (spark.python.task.killTimeout, 2 s by
# default, counted from the kill, which may come before the task's end).
# A busy query's next task comes sooner and finds it streaming.
PAUSE_AFTER_S = 0.5

# A task of a stopped run may give its subscriber back after the stop (Spark
# cancels the micro-batch; the Python side can still finish its last pull). A
# return up to this long after the stop is still the stopped run's and is
# closed too (a later run removes the mark before its first task,
# DriverState.resume; the bound only limits what a mark a failed removal left
# can close). Else a stopped query's prefetch (up to maxBytesPerPartition)
# would stay for subscriberIdleMs in a worker the next query uses, on top of
# that query's budget. Seconds; the executor's clock against the driver's.
LATE_RETURN_S = 60.0


def _unknown() -> float | None:
    return None


@dataclass
class _Idle:
    sub: Subscriber
    since: float  # time.time() when its task gave it back
    idle_s: float
    activity: Callable[[], float | None]  # time.time() of the query's last task activity; None: unknown
    max_wait_s: float  # how much longer than idle_s the query's activity may keep it
    stopped: Callable[[], float | None] = _unknown  # time.time() the query last stopped; None: never, or unknown
    paused: bool = False  # its streams paused (PAUSE_AFTER_S); the task taking it resumes it

    def expired(self, now: float) -> bool:
        """The query stopped after its task gave it back, or at most
        LATE_RETURN_S before; or unused for idle_s since its task ended and
        since the query's last activity; never kept longer than idle_s +
        max_wait_s."""
        try:
            stopped = self.stopped()
        except Exception:  # cannot tell: idle_s decides
            stopped = None
        if stopped is not None and stopped >= self.since - LATE_RETURN_S:
            return True
        if now - self.since < self.idle_s:
            return False
        if now - self.since >= self.idle_s + self.max_wait_s:
            return True
        try:
            last = self.activity()
        except Exception:  # cannot tell (e.g. the log's store is unreachable): idle_s alone decides
            return True
        return last is None or now - last >= self.idle_s


class SubscriberPool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, _Idle] = {}  # SubscriberConfig JSON -> its idle subscriber
        self._in_use: set[Subscriber] = set()  # leased by a running task
        self._discard: set[Subscriber] = set()  # in use, to be closed when given back
        # Being closed by some thread: set when the close has returned.
        # Entered under the lock in the same step that takes a subscriber
        # out of _idle or _in_use, so close_all never misses one.
        self._closing: dict[Subscriber, threading.Event] = {}
        self._reaper: threading.Thread | None = None

    @contextmanager
    def lease(self, config: SubscriberConfig, idle_s: float,
              activity: Callable[[], float | None] = _unknown,
              max_wait_s: float = 0.0,
              stopped: Callable[[], float | None] = _unknown) -> Iterator[Subscriber]:
        """Yields a subscriber for config: an idle one if there is one.
        After a clean exit it goes back to the pool until it has been unused
        for idle_s seconds (0: closed at once) counted from its own return
        and from activity() (when a task of the query was last active), but
        no longer than idle_s + max_wait_s, and only until stopped() (when
        the query last stopped) is later than its return less LATE_RETURN_S.
        After an error it is closed, so a retry starts clean."""
        key = config.to_json()
        with self._lock:
            found = self._idle.pop(key, None)
            if found is not None:
                self._in_use.add(found.sub)
        if found is None:
            # Another query's subscriber may have expired (its query just
            # stopped) without the reaper having looked yet: its prefetch
            # goes before this one's comes in, so a worker holds one budget.
            self._close_expired()
        worker_exit.register(self.close_all)
        if found is not None and found.paused:
            try:
                found.sub.resume()
            except Exception:  # a fresh one instead
                with self._lock:
                    self._in_use.discard(found.sub)
                    self._begin_close(found.sub)
                self._close(found.sub, quietly=True)
                found = None
        sub = found.sub if found else Subscriber(config)
        with self._lock:
            self._in_use.add(sub)
        try:
            yield sub
        except BaseException:
            self._give_back(sub, close=True)
            self._close(sub)
            raise
        if self._give_back(sub, close=idle_s <= 0):
            self._close(sub)
            return
        evicted: list[Subscriber] = []
        with self._lock:
            self._idle[key] = _Idle(sub, time.time(), idle_s, activity, max_wait_s, stopped)
            while len(self._idle) > MAX_IDLE:
                oldest = min(self._idle, key=lambda k: self._idle[k].since)
                evicted.append(self._idle.pop(oldest).sub)
                self._begin_close(evicted[-1])
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name="pubsub-go-idle-subscribers", daemon=True)
                self._reaper.start()
        for s in evicted:
            self._close(s)

    def idle(self) -> int:
        """How many subscribers this worker keeps unused."""
        with self._lock:
            return len(self._idle)

    def keeps(self, config: SubscriberConfig) -> bool:
        """Whether this worker keeps an unused subscriber for config."""
        with self._lock:
            return config.to_json() in self._idle

    def discard(self, sub: Subscriber) -> None:
        """The task using sub wants it closed when it gives it back, not kept."""
        with self._lock:
            if sub in self._in_use:
                self._discard.add(sub)

    def _give_back(self, sub: Subscriber, close: bool) -> bool:
        """Uncounts sub as in use; True if it is to be closed (close, or it
        was discarded), and then counts it as closing."""
        with self._lock:
            self._in_use.discard(sub)
            if sub in self._discard:
                self._discard.remove(sub)
                close = True
            if close:
                self._begin_close(sub)
            return close

    def _begin_close(self, sub: Subscriber) -> None:
        """Counts sub as closing; the caller holds the lock and took sub
        out of _idle or _in_use in the same hold, then calls _close."""
        self._closing.setdefault(sub, threading.Event())

    def _close(self, sub: Subscriber, quietly: bool = False) -> None:
        """Closes sub (counted as closing by _begin_close) and uncounts it
        once the close has returned."""
        try:
            if quietly:
                _close_quietly(sub)
            else:
                sub.close()
        finally:
            with self._lock:
                done = self._closing.pop(sub, None)
            if done is not None:
                done.set()

    def close_all(self, bound_s: float = worker_exit.CLOSE_BOUND_S) -> None:
        """Closes every subscriber of this worker, kept or in use, together,
        and waits for those another thread is closing, at most bound_s in
        all (the worker is ending: worker_exit)."""
        with self._lock:
            subs = [e.sub for e in self._idle.values()] + list(self._in_use)
            self._idle.clear()
            for s in subs:
                self._begin_close(s)
            closing = list(self._closing.values())
        threads = [threading.Thread(target=self._close, args=(s, True), daemon=True) for s in subs]
        for t in threads:
            t.start()
        deadline = time.monotonic() + bound_s
        for done in closing:
            done.wait(max(0.0, deadline - time.monotonic()))

    def _reap(self) -> None:
        while True:
            time.sleep(REAP_PERIOD_S)
            self._close_expired()

    def _close_expired(self) -> None:
        now = time.time()
        self._pause_unused(now)
        with self._lock:
            candidates = list(self._idle.items())
        # activity() lists a directory, stopped() reads a file's time:
        # not under the lock, which tasks take.
        expired = [(k, e) for k, e in candidates if e.expired(now)]
        with self._lock:
            # Only if no task took it (and put it back) meanwhile.
            subs = [self._idle.pop(k).sub for k, e in expired if self._idle.get(k) is e]
            for s in subs:
                self._begin_close(s)
        for s in subs:
            self._close(s, quietly=True)


    def _pause_unused(self, now: float) -> None:
        """Pauses the kept subscribers unused for PAUSE_AFTER_S. Under the
        lock, so that a task taking one sees whether it was paused (a pause
        waits only until each stream's half-close is sent, a goroutine's
        turn: Subscriber.Pause in go/internal/subscriber/pause.go)."""
        with self._lock:
            for e in self._idle.values():
                if not e.paused and now - e.since >= PAUSE_AFTER_S:
                    try:
                        e.sub.pause()
                    except Exception:  # noqa: S112 - it keeps streaming; closing it later still works
                        continue
                    e.paused = True


def _close_quietly(sub: Subscriber) -> None:
    try:
        sub.close()
    except Exception:  # best effort: neither the reaper, a task opening its own nor an ending worker may fail for it
        pass


POOL = SubscriberPool()
