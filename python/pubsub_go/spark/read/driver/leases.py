"""The driver keeps the leases of recorded, uncommitted messages alive
until the committer acks them: a thread extends them every
commitLeaseSeconds / 4, and a finished batch's leases are taken over as
soon as the driver sees the batch.

The take-over runs on the same thread, not in the caller: the caller is
latestOffset, on Spark's critical path between two micro-batches, and a
batch of 100,000 messages is 40 ModifyAckDeadline requests, milliseconds
every trigger would wait (bench/tools/spark_cpu.py prints each trigger's
latestOffset). The tasks already set these leases to commitLeaseSeconds
when they handed their messages over, and mark the entries whose hand-over
succeeded (BatchLog.handed_over): the take-over only covers the others, so
a few milliseconds later is as good, and a batch handed over whole costs
the driver no modack at all."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pyarrow as pa

from ....client import Subscriber
from ..options.source import SourceOptions
from .figures import Figures
from .thread import DriverThread

log = logging.getLogger("pubsub_go.source")


class LeaseKeeper(DriverThread):
    def __init__(self, acker: Subscriber, opts: SourceOptions, lock: threading.Lock, figures: Figures,
                 pending: Callable[[], list[pa.Array]]) -> None:
        """pending: the ack ids of every recorded, uncommitted entry; called with lock held."""
        super().__init__("pubsub-go-lease-keeper", self._keep)
        self.acker, self.opts, self.figures = acker, opts, figures
        self._lock = lock
        self._pending = pending
        self._fresh: list[pa.Array] = []  # finished batches' ids, not taken over yet
        self._start()

    def renew(self, ids: list[pa.Array]) -> None:
        """Has the thread take over the leases of a finished batch now,
        without waiting for its period (the tasks' own hand-over may have
        failed). Returns at once."""
        if not ids:
            return
        with self._cv:
            self._fresh.extend(ids)
            self._cv.notify()

    def _extend(self, acks: pa.Array) -> None:
        self.acker.modack(acks, self.opts.commit_lease_seconds)
        self.figures.count("leaseExtensions", len(acks))

    def _keep(self) -> None:
        period = max(5.0, self.opts.commit_lease_seconds / 4)
        due = time.monotonic() + period
        while True:
            with self._cv:
                while not self._stop and not self._fresh and time.monotonic() < due:
                    self._cv.wait(max(0.0, due - time.monotonic()))
                if self._stop:
                    return
                fresh, self._fresh = self._fresh, []
            if fresh:
                # Without the driver's lock: these ids are a finished batch's,
                # and a lease extended after the committer acked it is harmless.
                try:
                    self._extend(pa.concat_arrays(fresh))
                except Exception as e:  # the tasks' hand-over may have worked; the period retries
                    log.warning("renewing the leases of a finished batch failed: %s", e)
                continue
            due = time.monotonic() + period
            if not self.opts.ack_on_commit:
                continue
            try:
                with self._lock:
                    ids = self._pending()
                    if ids:
                        self._extend(pa.concat_arrays(ids))
            except Exception as e:
                log.warning("extending the leases of uncommitted batches failed: %s", e)
