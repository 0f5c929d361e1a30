"""The source's state on the driver, in the source runner process: the
acker (a subscriber that never pulls), the lease keeper, the committer and
the figures, around one lock and the driver's reading of the batch log."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

from ....client import Subscriber
from ..batchlog import BatchLog
from ..options.source import SourceOptions
from ..task.subscriber_config import subscriber_config
from .committer import Committer
from .figures import BatchSummary, Figures
from .leases import LeaseKeeper
from .logged_batches import LoggedBatches
from .offsets import BatchOffset

log = logging.getLogger("pubsub_go.source")


class DriverState:
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.acker = Subscriber(subscriber_config(opts, pull=False))  # verifies the subscription
        self.cutoff_us: int | None = None  # AvailableNow, drainBacklog: when the query started
        # Identifies this run of the query (offsets carry it): the
        # end-of-backlog decision only trusts batches of its own run.
        self.run_id = uuid.uuid4().hex[:12]
        self.idle_reported = -1  # the batch after which "no new data" was reported
        self.latest: BatchOffset | None = None
        self._resumed = False  # resume() ran
        self._lock = threading.Lock()
        self.logged = LoggedBatches(BatchLog(opts.batch_log_location))
        self.figures = Figures()
        self.leases = LeaseKeeper(self.acker, opts, self._lock, self.figures, self._pending_ack_ids)
        self.committer = Committer(self.acker, opts, self._lock, self.logged, self.figures)

    def _pending_ack_ids(self) -> list:
        """The caller holds _lock."""
        return self.logged.ack_ids(self.logged.pending(self.latest.gen)) if self.latest is not None else []

    def batch_summary(self, gen: str, batch: int) -> BatchSummary | None:
        """The summary of a batch whose tasks all published their entries
        (None while any has not); the first time, the leases of entries
        whose task did not hand them over are taken over."""
        with self._lock:
            known = self.figures.known_summary(gen, batch)
            if known is not None:
                return known
            entries = self.logged.entries(gen, batch)
            if entries and self.opts.ack_on_commit:
                self.leases.renew(self.logged.ack_ids([e for e in entries if not self.logged.log.handed_over(e.path)]))
            return self.figures.summarize(gen, batch, entries)

    def resume(self, gen: str) -> None:
        """Once per run, at its first latestOffset or partitions() (a batch
        re-run on restart): removes the stop mark an earlier run of the
        query left, so that executors never compare it with this run's
        subscribers (a driver clock ahead of theirs would make it look newer
        and close them after every task)."""
        if self._resumed:
            return
        self._resumed = True
        try:
            self.logged.log.clear_stopped(gen)
        except OSError as e:  # only the comparison of times is left to decide
            log.warning("could not clear the batch log's stop mark: %s", e)

    def commit(self, gen: str, upto: int) -> None:
        self.committer.commit(gen, upto)

    def report(self) -> dict[str, Any]:
        with self._lock:
            pending = self.logged.pending(self.latest.gen) if self.latest is not None else []  # one listing
            return self.figures.report(self.latest, pending, self.opts.ack_on_commit)

    def stop(self) -> None:
        self.committer.stop()
        self.leases.stop()
        # The last commit's acks go out before the acker closes.
        self.committer.join(timeout=120)
        self.leases.join(timeout=10)
        if self.latest is not None:
            with self._lock:  # after the last commit, which may add spares
                self.logged.log.drop_spares(self.latest.gen)
            try:  # executors then close what this query's tasks kept and nack its prefetch
                self.logged.log.mark_stopped(self.latest.gen)
            except OSError as e:  # they close it after subscriberIdleMs instead
                log.warning("could not mark the query stopped in the batch log: %s", e)
        self.acker.close()
