"""Executor side: a publisher outlives the task that opened it.

Opening a publisher costs a gRPC connection and a topic check per task, and
every micro-batch would start on a cold connection. Spark reuses its Python
workers, so a worker keeps its publisher between tasks: the next task with
the same options (topic, connection, batching) finds it connected.

A kept publisher holds nothing unacknowledged: it goes back to the pool only
after the task's flush returned with every message acknowledged, so closing
it later, or losing it with its worker, loses nothing. A task that fails
closes its publisher, so a retry starts clean. One that no task used for
``idle_s`` is closed by a background thread, and the rest at interpreter
exit (PySpark's forked workers end with os._exit, which skips that: the OS
then closes the idle connection, which is equally harmless).

Nothing here loads the Go library before a task leases a publisher, so
importing this module before PySpark forks is safe.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

    from ...client import Publisher, PublisherConfig

log = logging.getLogger("pubsub_go.sink")

# Different topics or options in one worker each keep one (a sink routing
# rows by a topic column keeps one per topic); beyond this the least
# recently used is closed.
MAX_IDLE = 8

COUNTERS = ("published", "bytes", "retries")


class LentPublisher:
    """A publisher lent to one task.

    publish() hands the batch to a thread that makes the Go call, so the
    task reads its next Arrow batch from Spark while Go converts this one
    (the call releases the GIL). The next hand-off waits until that call
    returned, so a task holds at most one batch more than a synchronous
    call would: the one it reads meanwhile. A failure is raised by the
    next publish() or by flush(), which first waits until every batch is
    in Go. flush() reports what this task added: the Go publisher's
    totals run over its whole life."""

    def __init__(self, pub: Publisher, base: dict[str, int], reused: bool) -> None:
        self.publisher = pub
        self.reused = reused  # kept from an earlier task
        self._base = base
        self.totals = base
        self.clean = True  # nothing published since the last successful flush
        self._queue: queue.Queue[tuple[pa.RecordBatch, int, str] | None] = queue.Queue()
        self._idle = threading.Semaphore(1)  # released when the Go call of the last batch returned
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def publish(self, batch: pa.RecordBatch, first_row: int, rows_of: str = "this task") -> None:
        """Hands batch (its first row is row first_row of rows_of, for
        error messages) to the publish thread once the previous batch's Go
        call returned."""
        self._raise_failure()
        self.clean = False
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pubsub-go-publish", daemon=True)
            self._thread.start()
        self._idle.acquire()
        self._raise_failure()
        self._queue.put((batch, first_row, rows_of))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._failure is not None:
                self._idle.release()
                continue  # drop what follows a failure; the task fails
            batch, first_row, rows_of = item
            try:
                self.publisher.publish(batch)
            except BaseException as e:  # noqa: BLE001 - raised in the task's thread
                self._failure = _locate(e, first_row, rows_of)
            finally:
                del batch, item  # the pyarrow batch is freed before the next hand-off
                self._idle.release()

    def _drain(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def stop(self) -> None:
        """After the task failed (its publisher is closed first, which ends
        a Go call that waits for room): ends the thread."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=30)

    def flush(self, timeout_ms: int) -> dict[str, int]:
        self._drain()
        got = self.publisher.flush(timeout_ms)
        self.totals = {k: int(got.get(k, 0)) for k in COUNTERS}
        self.clean = True
        return {k: self.totals[k] - self._base.get(k, 0) for k in COUNTERS}


def _locate(e: BaseException, first_row: int, rows_of: str) -> BaseException:
    """A bad row: Go numbers rows within the Arrow batch; say where that
    batch starts in the task."""
    from ...errors import InvalidArgumentError

    if isinstance(e, InvalidArgumentError):
        located = InvalidArgumentError(e.code, f"{e.message} (the Arrow batch starts at row {first_row} of "
                                               f"{rows_of})", e.kind)
        located.__cause__ = e
        return located
    return e


@dataclasses.dataclass
class _Kept:
    publisher: Publisher
    totals: dict[str, int]
    since: float
    idle_s: float


class PublisherPool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, _Kept] = {}
        self._reaper: threading.Thread | None = None
        self._exit_hook = False
        self.opened = 0  # publishers this pool opened (tests read it)

    @contextmanager
    def lease(self, config: PublisherConfig, idle_s: float) -> Iterator[LentPublisher]:
        """Yields a publisher for config: a kept one if there is one, its
        id numbering restarted under config.id_prefix. After a clean exit
        with everything flushed it is kept for idle_s seconds (0: closed at
        once); after an error, or with rows not flushed, it is closed."""
        from ...client import Publisher

        # The id prefix changes with every task: a kept publisher takes the
        # new one through start_ids, so it is not part of the key.
        shared = dataclasses.replace(config, id_prefix="")
        key = shared.to_json()
        with self._lock:
            kept = self._kept.pop(key, None)
        if kept is not None:
            pub, base = kept.publisher, kept.totals
        else:
            pub, base = Publisher(shared), {}
            self.opened += 1
        lent = LentPublisher(pub, base, reused=kept is not None)
        try:
            if config.id_attribute:
                pub.start_ids(config.id_prefix)
            yield lent
        except BaseException:
            _close(pub)
            lent.stop()
            raise
        if idle_s <= 0 or not lent.clean:
            _close(pub)
            return
        self._keep(key, _Kept(pub, lent.totals, time.monotonic(), idle_s))

    def _keep(self, key: str, kept: _Kept) -> None:
        evicted: list[Publisher] = []
        with self._lock:
            self._kept[key] = kept
            while len(self._kept) > MAX_IDLE:
                oldest = min(self._kept, key=lambda k: self._kept[k].since)
                evicted.append(self._kept.pop(oldest).publisher)
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name="pubsub-go-idle-publishers", daemon=True)
                self._reaper.start()
            if not self._exit_hook:
                self._exit_hook = True
                atexit.register(self.close_all)
        for p in evicted:
            _close(p)

    def _reap(self) -> None:
        while True:
            time.sleep(0.5)
            now = time.monotonic()
            with self._lock:
                expired = [k for k, v in self._kept.items() if now - v.since >= v.idle_s]
                pubs = [self._kept.pop(k).publisher for k in expired]
            for p in pubs:
                _close(p)

    def close_all(self) -> None:
        """Closes every kept publisher (at interpreter exit; tests)."""
        with self._lock:
            pubs = [v.publisher for v in self._kept.values()]
            self._kept.clear()
        for p in pubs:
            _close(p)

    def idle(self) -> int:
        with self._lock:
            return len(self._kept)


def _close(pub: Publisher) -> None:
    try:
        pub.close()
    except Exception as e:  # the task's outcome is already decided; nothing is unacknowledged or it failed
        log.debug("closing a publisher failed: %s", e)


POOL = PublisherPool()
