"""The commit protocol's last step, on the driver: when Spark commits a
batch, the ack ids recorded in the batch log for it (and any earlier batch
left over) are acked, then the batch is removed from the log.

Spark calls commit() on its critical path (inside "walCommit", before the
next batch is planned); acking a batch takes an RPC per 2500 messages, so it
runs on a thread of its own. A failed ack leaves the batch in the log: the
next commit retries it, and its leases are kept alive meanwhile."""

from __future__ import annotations

import logging
import threading

import pyarrow as pa

from ....client import Subscriber
from ..options.source import SourceOptions
from ..task import fault_points
from .figures import Figures
from .logged_batches import LoggedBatches
from .thread import DriverThread

log = logging.getLogger("pubsub_go.source")


class Committer(DriverThread):
    def __init__(self, acker: Subscriber, opts: SourceOptions, lock: threading.Lock, logged: LoggedBatches,
                 figures: Figures) -> None:
        super().__init__("pubsub-go-committer", self._loop)
        self.acker, self.opts, self.logged, self.figures = acker, opts, logged, figures
        self._lock = lock
        self._wanted: tuple[str, int] | None = None
        self._start()

    def commit(self, gen: str, upto: int) -> None:
        """Acks every logged batch <= upto of gen, on the committer thread."""
        with self._cv:
            self._wanted = (gen, upto)
            self._cv.notify()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while self._wanted is None and not self._stop:
                    self._cv.wait()
                wanted, self._wanted = self._wanted, None
            if wanted is not None:
                try:
                    self.commit_now(*wanted)
                except Exception as e:  # the entries stay: the next commit retries
                    log.warning("committing batch %d failed, will retry at the next commit: %s", wanted[1], e)
            elif self._stop:
                return

    def commit_now(self, gen: str, upto: int) -> None:
        with self._lock:
            for batch in self.logged.batches(gen):
                if batch > upto:
                    continue
                entries = self.logged.entries(gen, batch)
                self.figures.summarize(gen, batch, entries)  # kept for latestOffset once the entries are gone
                ids = self.logged.ack_ids(entries)
                try:
                    if ids and self.opts.ack_on_commit:
                        self._ack(batch, pa.concat_arrays(ids))
                except Exception as e:
                    # Kept in the log: the next commit retries. Leases are still kept alive.
                    self.figures.count("ackFailures", 1)
                    log.warning("acking batch %d failed, will retry at the next commit: %s", batch, e)
                    continue
                self.logged.remove(gen, batch)

    def _ack(self, batch: int, acks: pa.Array) -> None:
        fault_points.at(fault_points.COMMIT_ACK)
        res = self.acker.ack(acks)
        # Exactly-once delivery: ids the service refused for good were not
        # acked (they come back); never count them as acked.
        self.figures.count("acked", res["done"])
        rejected = sum(res["rejected"].values())
        if rejected:
            self.figures.count("ackRejected", rejected)
            log.warning("batch %d: the service rejected %d of %d acks (%s); those messages will "
                        "be redelivered", batch, rejected, len(acks), res["rejected"])
