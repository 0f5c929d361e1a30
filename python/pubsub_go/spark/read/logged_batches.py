"""The driver's reading of the batch log: what it needs of each published
entry (ack ids, row count, the task's counters) is read once and kept until
the batch is committed and removed. Not thread-safe: the driver's callers
hold its lock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .batchlog import BatchLog


@dataclass(frozen=True)
class EntryInfo:
    """What the driver needs of a published log entry, which never changes."""

    path: str
    ack_ids: pa.Array
    rows: int
    stats: dict[str, Any]


class LoggedBatches:
    def __init__(self, log: BatchLog) -> None:
        self.log = log
        self._read: dict[str, EntryInfo] = {}  # entry path -> info: each entry is read once

    def entries(self, gen: str, batch: int) -> list[EntryInfo]:
        out = []
        for path in self.log.entry_paths(gen, batch):
            info = self._read.get(path)
            if info is None:
                # Mapped: safe, since entries are removed (and their files
                # reused) only under the driver's lock, which callers hold.
                e = self.log.read_path(path, mapped=True)
                # Concatenating copies the ack ids out of the entry's buffers,
                # so the cache does not keep the rows alive.
                acks = pa.concat_arrays([e.ack_ids, e.ack_ids.slice(0, 0)])
                info = self._read[path] = EntryInfo(path, acks, e.data.num_rows, e.stats)
            out.append(info)
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
        self.log.remove_batch(gen, batch)


def ack_ids(entries: list[EntryInfo]) -> list[pa.Array]:
    """The non-empty ack id arrays of entries."""
    return [e.ack_ids for e in entries if len(e.ack_ids)]
