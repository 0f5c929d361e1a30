"""The message ids of every published entry of a query, indexed once per
process, so a task drops redeliveries of recorded messages: replay and
redelivery never both deliver a message."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from .store import BatchLog


def recorded_message_ids(log: BatchLog, gen: str) -> RecordedIds:
    """The message ids of every published entry of gen: recorded, so
    handed to Spark (or to be, on replay), and not yet acked (the driver
    removes a batch once its acks succeed). Entries never change, so
    each is read and indexed once per process."""
    paths = [p for b in log.batches(gen) for p in log.entry_paths(gen, b)]
    out = []
    with _IDS_LOCK:
        for p in paths:
            ids = _IDS_CACHE.get(p)
            if ids is None:
                try:
                    ids = _IdIndex(log.read_message_ids(p))
                except FileNotFoundError:
                    # Removed since the listing: committed and acked, so
                    # nothing of it can come back as a duplicate.
                    continue
                _IDS_CACHE[p] = ids
            out.append(ids)
        for p in set(_IDS_CACHE) - set(paths):  # removed batches: committed and acked
            del _IDS_CACHE[p]
    return RecordedIds(out)


def _canonical_ints(ids: pa.Array) -> np.ndarray | None:
    """ids as int64 if every one is a canonical decimal integer (Pub/Sub's
    message ids are: "2070443601311540"), else None. Canonical, because
    "007" and "7" are different ids that parse to the same number.

    Runs for every batch a task pulls, so it checks the first byte of each
    id and lets Arrow's cast check the rest: an id whose first byte is 1-9
    (or that is "0") and that casts is canonical, since after the first
    byte the cast accepts digits only (a sign or "0x" can only come first).
    Casting back to strings and comparing said the same at 3.5x the cost
    (4,000 ids: 277 µs, now 78 µs; bench/tools/batchlog_read.py times the whole
    check of a pulled batch)."""
    n = len(ids)
    if pa.types.is_large_string(ids.type):
        ids = ids.cast(pa.string())
    if ids.type != pa.string() or ids.null_count:
        return None
    if n == 0:
        return np.empty(0, np.int64)
    _, offsets_buf, data_buf = ids.buffers()
    offsets = np.frombuffer(offsets_buf, np.int32, n + 1, ids.offset * 4)
    lengths = np.diff(offsets)
    if lengths.min() < 1:
        return None
    first = np.frombuffer(data_buf, np.uint8)[offsets[:-1]]
    not_1_to_9 = (first - np.uint8(ord("1"))) > 8  # wraps around below "1"
    if (not_1_to_9 & ((first != ord("0")) | (lengths != 1))).any():
        return None
    try:
        return pc.cast(ids, pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # not digits, or past int64
        return None


class _IdIndex:
    """One entry's message ids, indexed once for membership tests.
    pc.is_in would rebuild a hash table of all of them for every batch a
    task pulls (28 ms per 1,000-row batch against 200,000 recorded ids, a
    quarter of the machine's CPU at 1 KB); a sorted int64 array (or, for
    ids that are not canonical integers, a Python set) is built once per
    process and probed per batch. bench/tools/batchlog_read.py times both."""

    def __init__(self, ids: pa.Array) -> None:
        ints = _canonical_ints(ids) if len(ids) else np.empty(0, np.int64)
        # Timsort ("stable"): where an entry's ids come in ascending runs
        # (the load server's are all in order) it merges them in linear
        # time, and shuffled ids cost it about what quicksort costs. 400,000
        # ids: in order 0.3 ms, 8 interleaved runs 5 ms, shuffled 24 ms;
        # numpy's default quicksort 19, 30 and 20 ms.
        self.sorted: np.ndarray | None = np.sort(ints, kind="stable") if ints is not None else None
        self.strings: frozenset[str] | None = frozenset(ids.to_pylist()) if ints is None else None

    def contains(self, ids: pa.Array, ints: np.ndarray | None) -> np.ndarray:
        if self.sorted is not None and ints is not None:
            if not len(self.sorted):
                return np.zeros(len(ints), bool)
            i = np.searchsorted(self.sorted, ints)
            i[i == len(self.sorted)] = 0
            return self.sorted[i] == ints
        strings = self.strings if self.strings is not None else frozenset(str(v) for v in self.sorted)  # type: ignore[union-attr]
        self.strings = strings
        return np.fromiter((x in strings for x in ids.to_pylist()), bool, len(ids))


class RecordedIds:
    """The message ids recorded in published entries (recorded_message_ids)."""

    def __init__(self, indexes: list[_IdIndex]) -> None:
        self._indexes = indexes

    def __len__(self) -> int:
        return sum(len(i.sorted) if i.sorted is not None else len(i.strings or ()) for i in self._indexes)

    def mask(self, ids: pa.Array) -> pa.Array | None:
        """A boolean mask of the ids among them, or None if none is."""
        if not self._indexes or not len(ids):
            return None
        ints = _canonical_ints(ids)
        hit = np.zeros(len(ids), bool)
        for index in self._indexes:
            hit |= index.contains(ids, ints)
        return pa.array(hit) if hit.any() else None


# Indexed message ids of published entries, by path (see recorded_message_ids).
_IDS_CACHE: dict[str, _IdIndex] = {}
_IDS_LOCK = threading.Lock()
