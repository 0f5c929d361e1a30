"""The driver's reading of the batch log: what it needs of each published
entry is read once and kept until the batch is committed and removed. Not
thread-safe: the driver's callers hold its lock.

Two reads, because they happen at different times. latestOffset, on
Spark's critical path between micro-batches, needs a finished batch's row
count and counters: the entry's footer and record batch headers, ~1 ms.
The ack ids (~4 MB per 200,000-row entry, copied out of the file: 7-30 ms
per batch at 1 KB, too slow for latestOffset) are needed only by the
committer thread, and by the lease keeper for an entry whose task did not
hand its leases over; they are read then."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..batchlog import BatchLog, detached


@dataclass(frozen=True)
class EntryInfo:
    """What the driver needs of a published log entry, which never changes."""

    path: str
    rows: int
    stats: dict[str, Any]


class LoggedBatches:
    def __init__(self, log: BatchLog) -> None:
        self.log = log
        self._read: dict[str, EntryInfo] = {}  # entry path -> info: each entry is read once
        self._acks: dict[str, pa.Array] = {}  # entry path -> its ack ids, once asked for

    def entries(self, gen: str, batch: int) -> list[EntryInfo]:
        out = []
        for path in self.log.entry_paths(gen, batch):
            info = self._read.get(path)
            if info is None:
                rows, stats = self.log.read_summary(path)
                info = self._read[path] = EntryInfo(path, rows, stats)
            out.append(info)
        return out

    def ack_ids(self, entries: list[EntryInfo]) -> list[pa.Array]:
        """The non-empty ack id arrays of entries."""
        out = []
        for e in entries:
            if not e.rows:
                continue
            acks = self._acks.get(e.path)
            if acks is None:
                # Mapped: safe, since entries are removed (and their files
                # reused) only under the driver's lock, which callers hold.
                # The copy is out of the file's pages, so it outlives them.
                acks = self._acks[e.path] = detached(self.log.read_path(e.path, mapped=True).ack_ids)
            out.append(acks)
        return out

    def batches(self, gen: str) -> list[int]:
        return self.log.batches(gen)

    def pending(self, gen: str) -> list[EntryInfo]:
        """The entries of every batch of gen in the log: recorded, not yet acked."""
        return [e for batch in self.log.batches(gen) for e in self.entries(gen, batch)]

    def remove(self, gen: str, batch: int) -> None:
        """Forgets a committed batch and removes it from the log."""
        for path in self.log.entry_paths(gen, batch):
            self._read.pop(path, None)
            self._acks.pop(path, None)
        self.log.remove_batch(gen, batch)
