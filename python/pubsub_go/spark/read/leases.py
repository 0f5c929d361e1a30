"""The driver keeps the leases of recorded, uncommitted messages alive
until the committer acks them: a thread extends them every
commitLeaseSeconds / 4, and a finished batch's leases are taken over as
soon as the driver sees the batch."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pyarrow as pa

from ...client import Subscriber
from .figures import Figures
from .options import SourceOptions

log = logging.getLogger("pubsub_go.source")


class LeaseKeeper:
    def __init__(self, acker: Subscriber, opts: SourceOptions, lock: threading.Lock, figures: Figures,
                 pending: Callable[[], list[pa.Array]]) -> None:
        """pending: the ack ids of every recorded, uncommitted entry; called with lock held."""
        self.acker, self.opts, self.figures = acker, opts, figures
        self._lock = lock
        self._pending = pending
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="pubsub-go-lease-keeper", daemon=True)
        self._thread.start()

    def renew(self, ids: list[pa.Array]) -> None:
        """Takes over the leases of a finished batch right away: its tasks'
        own hand-over may have failed, and the thread only runs every few
        minutes. The caller holds the lock."""
        if not ids:
            return
        try:
            self._extend(pa.concat_arrays(ids))
        except Exception as e:  # the tasks' hand-over may have worked; the thread retries
            log.warning("renewing the leases of a finished batch failed: %s", e)

    def _extend(self, acks: pa.Array) -> None:
        self.acker.modack(acks, self.opts.commit_lease_seconds)
        self.figures.count("leaseExtensions", len(acks))

    def _keep(self) -> None:
        period = max(5.0, self.opts.commit_lease_seconds / 4)
        while not self._stop.wait(period):
            if not self.opts.ack_on_commit:
                continue
            try:
                with self._lock:
                    ids = self._pending()
                    if ids:
                        self._extend(pa.concat_arrays(ids))
            except Exception as e:
                log.warning("extending the leases of uncommitted batches failed: %s", e)

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout=timeout)
