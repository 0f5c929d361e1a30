"""The durable batch log: what each task handed to Spark, per micro-batch.

Pub/Sub has no offsets to replay, so a task records the rows it hands out
(Arrow IPC, with the ack ids beside them) as it yields them, and publishes
the entry only once all of it is written. A re-run of
the same (batch, partition) -- task retry, speculative attempt, a batch
DataFrame evaluated twice, or the driver re-running the last uncommitted
batch after a crash -- reads the entry instead of pulling new messages, so
Spark always sees one version of a batch. The driver acks an entry's ack ids
when Spark commits the batch, then removes the entry.

Layout: <root>/<generation>/<batch:020d>/part-<partition:05d>.arrow. The
generation is minted by initialOffset() for each new query, so a new query
never replays a stale entry of an old one. On a local file system removed
entries' files are reused (spare_entries.py).
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from . import spare_entries

ACK_COLUMN = "__pubsub_go_ack_id"
# The entry's message ids, whatever columns the rows keep (schema mode may
# project message_id away): tasks drop redeliveries of recorded messages by
# them (see recorded_message_ids). They are written to a small file of their
# own, named in the entry's last batch under IDS_KEY: a task reads the ids
# of every recorded entry, and reading them out of the entry would read (or
# map: see read_path) the whole file. Entries written before that kept them
# in a column of this name beside the rows (read_message_ids still reads it).
MESSAGE_ID_COLUMN = "__pubsub_go_message_id"
_BOOKKEEPING = (ACK_COLUMN, MESSAGE_ID_COLUMN)
STATS_KEY = b"pubsub_go.stats"
IDS_KEY = b"pubsub_go.ids_file"
_IDS_MARK = ".ids-"
# An entry is written as <entry>.tmp-<uuid>, then linked or moved to <entry>.
_TMP_MARK = ".tmp-"
# <entry>.leased: the task handed the entry's leases over (task.py), so the
# driver need not set them again when it first sees the batch.
_HANDED_OVER_MARK = ".leased"
# <gen>/_stopped: the driver stopped the query (its mtime says when), so
# executors close the subscribers its tasks kept (subscriber_pool.py).
_STOPPED = "_stopped"
# The IPC writer writes each buffer of a batch, and each buffer's padding,
# separately: ~22 write(2) calls per 1,000-row batch of the raw schema. A
# buffer this size coalesces the small ones; larger writes (the payload
# values) pass straight through.
_WRITE_BUFFER = 64 << 10


@dataclass
class Entry:
    """One task's hand-out: the data, its ack ids (same order) and counters."""

    data: pa.Table
    ack_ids: pa.Array
    stats: dict[str, Any] = field(default_factory=dict)


def _open_fs(location: str) -> tuple[pafs.FileSystem, str]:
    if "://" in location:
        return pafs.FileSystem.from_uri(location)
    return pafs.LocalFileSystem(), os.path.abspath(location)


class BatchLog:
    def __init__(self, location: str) -> None:
        self.location = location
        self.fs, self.root = _open_fs(location)
        self._local = isinstance(self.fs, pafs.LocalFileSystem)

    # -- paths ---------------------------------------------------------------
    def batch_dir(self, gen: str, batch: int) -> str:
        return f"{self.root}/{gen}/{batch:020d}"

    def entry_path(self, gen: str, batch: int, part: int) -> str:
        return f"{self.batch_dir(gen, batch)}/part-{part:05d}.arrow"

    # -- tasks ---------------------------------------------------------------
    def read(self, gen: str, batch: int, part: int) -> Entry | None:
        path = self.entry_path(gen, batch, part)
        if self.fs.get_file_info(path).type == pafs.FileType.NotFound:
            return None
        return self.read_path(path)

    def read_path(self, path: str, *, mapped: bool = False) -> Entry:
        """The entry at path; FileNotFoundError if it was removed (its batch
        committed) before or while it was read.

        mapped (local file systems): memory-map the file, so reading a few
        columns touches only their pages. Only for the driver, which
        removes entries under the lock it reads them with: a removed
        entry's file is reused (spare_entries.py), and a mapping of a file
        that is then cut short faults (SIGBUS) when read past its new end.
        Everyone else reads (copies) the file, and a read that raced the
        removal fails or is caught by the check afterwards."""
        if mapped:
            with self._open(path, mapped=True) as f:
                table, stats = _read_entry(ipc.open_file(f))
        else:
            file_id = os.stat(path).st_ino if self._local else None
            with self._removed_while_read(path, file_id), self._open(path) as f:
                table, stats = _read_entry(ipc.open_file(f))
        cols = {}
        for name in _BOOKKEEPING:
            idx = table.schema.get_field_index(name)
            if idx < 0:
                continue
            cols[name] = table.column(idx).combine_chunks() if table.num_rows else pa.array([], pa.string())
            table = table.remove_column(idx)
        return Entry(data=table.replace_schema_metadata(None), ack_ids=cols[ACK_COLUMN], stats=stats)

    def read_message_ids(self, path: str) -> pa.Array:
        """The message ids of the entry at path, from the file its last
        batch names (only the footer and that empty batch of the entry are
        read); FileNotFoundError if the entry was removed before or while
        it was read."""
        file_id = os.stat(path).st_ino if self._local else None
        with self._removed_while_read(path, file_id), self._open(path) as f:
            reader = ipc.open_file(f)
            n = reader.num_record_batches
            meta = reader.get_batch_with_custom_metadata(n - 1).custom_metadata if n else None
            ids_file = meta.get(IDS_KEY) if meta else None
            if ids_file is None:  # an entry written before the ids had a file of their own
                table = reader.read_all()
                column = MESSAGE_ID_COLUMN if MESSAGE_ID_COLUMN in table.schema.names else "message_id"
                return table.column(column).combine_chunks() if table.num_rows else pa.array([], pa.string())
        # Checked above: ids_file is this entry's. It is never reused, and
        # removed only with the entry (FileNotFoundError: committed).
        with self._open(f"{os.path.dirname(path)}/{ids_file.decode()}") as f:
            ids = ipc.open_file(f).read_all().column(0)
        return ids.combine_chunks() if ids.num_chunks else pa.array([], pa.string())

    def _open(self, path: str, *, mapped: bool = False) -> Any:
        """path for reading; mapped (local file systems only, see read_path): memory-mapped."""
        if not self._local:
            return self.fs.open_input_file(path)
        return _map(path) if mapped else pa.OSFile(path)

    @contextlib.contextmanager
    def _removed_while_read(self, path: str, file_id: int | None) -> Iterator[None]:
        """Turns a read that raced the entry's removal into FileNotFoundError.

        A removed entry's file may be reused and rewritten (spare_entries.py)
        while it is read: the read then fails on what it finds, or succeeds
        with another entry's data. Either way, if the path no longer names
        the file read, the entry was removed: its batch was committed. The
        check is sound because a removed entry's path never comes back (a
        committed batch never runs again) and its file only changes after
        its removal."""
        try:
            yield
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as e:
            if not self._same_file(path, file_id):
                raise FileNotFoundError(path) from e
            raise
        if not self._same_file(path, file_id):
            raise FileNotFoundError(path)

    def _same_file(self, path: str, file_id: int | None) -> bool:
        if file_id is None:
            return True  # not local: files are never reused
        try:
            return os.stat(path).st_ino == file_id
        except FileNotFoundError:
            return False

    def read_summary(self, path: str) -> tuple[int, dict[str, Any]]:
        """The entry's row count and counters, from its footer and record
        batch headers only (no column is read). For the driver, which
        removes entries under the lock it reads them with."""
        with self._open(path, mapped=True) as f:
            reader = ipc.open_file(f)
            n = reader.num_record_batches
            rows = sum(reader.get_batch(i).num_rows for i in range(n))
            return rows, _entry_stats(reader)

    def mark_handed_over(self, gen: str, batch: int, part: int) -> None:
        """Records that the entry's leases were set to commitLeaseSeconds."""
        with self.fs.open_output_stream(self.entry_path(gen, batch, part) + _HANDED_OVER_MARK):
            pass

    def handed_over(self, path: str) -> bool:
        """Whether the task that published the entry at path handed its leases over."""
        return self.fs.get_file_info(path + _HANDED_OVER_MARK).type != pafs.FileType.NotFound

    def writer(self, gen: str, batch: int, part: int, max_queue_bytes: int = 16 << 20) -> EntryWriter:
        """An entry written batch by batch, invisible until published."""
        return EntryWriter(self, gen, batch, part, max_queue_bytes)

    def recorded_message_ids(self, gen: str) -> RecordedIds:
        """The message ids of every published entry of gen: recorded, so
        handed to Spark (or to be, on replay), and not yet acked (the driver
        removes a batch once its acks succeed). Entries never change, so
        each is read and indexed once per process."""
        paths = [p for b in self.batches(gen) for p in self.entry_paths(gen, b)]
        out = []
        with _IDS_LOCK:
            for p in paths:
                ids = _IDS_CACHE.get(p)
                if ids is None:
                    try:
                        ids = _IdIndex(self.read_message_ids(p))
                    except FileNotFoundError:
                        # Removed since the listing: committed and acked, so
                        # nothing of it can come back as a duplicate.
                        continue
                    _IDS_CACHE[p] = ids
                out.append(ids)
            for p in set(_IDS_CACHE) - set(paths):  # removed batches: committed and acked
                del _IDS_CACHE[p]
        return RecordedIds(out)

    def _publish(self, tmp: str, final: str) -> bool:
        if self._local:
            # link(2) fails if the name exists: an atomic first-writer-wins.
            try:
                os.link(tmp, final)
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        # Object stores have no exclusive create; HDFS rename refuses to
        # overwrite. Check-then-move: speculative attempts may race here.
        if self.fs.get_file_info(final).type != pafs.FileType.NotFound:
            self.fs.delete_file(tmp)
            return False
        self.fs.move(tmp, final)
        return True

    def _discard(self, tmp: str) -> None:
        try:
            self.fs.delete_file(tmp)
        except (FileNotFoundError, OSError):
            pass

    # -- driver --------------------------------------------------------------
    def entry_paths(self, gen: str, batch: int) -> list[str]:
        """The published entries of a batch (temporary files excluded)."""
        sel = pafs.FileSelector(self.batch_dir(gen, batch), allow_not_found=True)
        return sorted(i.path for i in self.fs.get_file_info(sel) if i.path.endswith(".arrow"))

    def last_activity(self, gen: str) -> float | None:
        """When the query last did something in the log of gen, in
        time.time() seconds: now while a task of the newest batch is writing
        its entry (it has handed rows to Spark; its temporary file exists),
        else the newest change to the log's directories: a task's first
        row or its entry's publication (the batch's directory), the
        driver's removal of a committed batch (gen's directory), which fills
        the gap before the next batch's tasks write. None: nothing to tell
        by. On object stores (gs://) directories have no times and a file
        being written is not listed: there it is None."""
        gen_dir = self.fs.get_file_info(f"{self.root}/{gen}")
        if gen_dir.type == pafs.FileType.NotFound:
            return None
        times = [gen_dir.mtime.timestamp()] if gen_dir.mtime is not None else []
        dirs = self._batch_dirs(gen)
        if dirs:
            newest = max(dirs, key=lambda d: d[0])[1]
            sel = pafs.FileSelector(newest.path, allow_not_found=True)
            if any(_TMP_MARK in os.path.basename(i.path) for i in self.fs.get_file_info(sel)):
                return time.time()
            if newest.mtime is not None:
                times.append(newest.mtime.timestamp())
        return max(times) if times else None

    def batches(self, gen: str) -> list[int]:
        return sorted(batch for batch, _ in self._batch_dirs(gen))

    def _batch_dirs(self, gen: str) -> list[tuple[int, pafs.FileInfo]]:
        """(batch, its directory's FileInfo) for every batch of gen, unordered."""
        sel = pafs.FileSelector(f"{self.root}/{gen}", allow_not_found=True)
        try:
            infos = self.fs.get_file_info(sel)
        except FileNotFoundError:  # created by a task meanwhile (allow_not_found covers only "absent")
            return []
        return [(int(os.path.basename(i.path)), i) for i in infos
                if i.type == pafs.FileType.Directory and os.path.basename(i.path).isdigit()]

    def remove_batch(self, gen: str, batch: int) -> None:
        """Removes a committed batch; on a local file system its entries'
        files become spares for the next tasks (spare_entries.py)."""
        d = self.batch_dir(gen, batch)
        if self._local:
            spare_entries.keep(self.root, gen, self.entry_paths(gen, batch))
        if self.fs.get_file_info(d).type != pafs.FileType.NotFound:
            self.fs.delete_dir(d)

    def _stopped_path(self, gen: str) -> str:
        return f"{self.root}/{gen}/{_STOPPED}"

    def mark_stopped(self, gen: str) -> None:
        """Records that the query stopped now (the driver, at stop); also
        for a query whose tasks have written nothing yet."""
        self.fs.create_dir(f"{self.root}/{gen}", recursive=True)
        with self.fs.open_output_stream(self._stopped_path(gen)):
            pass

    def clear_stopped(self, gen: str) -> None:
        """Removes the mark of an earlier stop (the driver of a new run)."""
        try:
            self.fs.delete_file(self._stopped_path(gen))
        except FileNotFoundError:
            pass

    def stopped_at(self, gen: str) -> float | None:
        """When the query last stopped, in time.time() seconds; None if it
        never did (or the store keeps no times)."""
        info = self.fs.get_file_info(self._stopped_path(gen))
        if info.type == pafs.FileType.NotFound or info.mtime is None:
            return None
        return info.mtime.timestamp()

    def drop_spares(self, gen: str) -> None:
        """Deletes the spare files of gen (the query stopped)."""
        if self._local:
            spare_entries.drop(self.root, gen)


def detached(column: pa.Array) -> pa.Array:
    """A copy of column that keeps nothing else alive: a column of an
    imported (or memory-mapped) batch holds the whole batch (or mapping)."""
    return pa.concat_arrays([column, column.slice(0, 0)])


def _canonical_ints(ids: pa.Array) -> np.ndarray | None:
    """ids as int64 if every one is a canonical decimal integer (Pub/Sub's
    message ids are: "2070443601311540"), else None. Canonical, because
    "007" and "7" are different ids that parse to the same number.

    Runs for every batch a task pulls, so it checks the first byte of each
    id and lets Arrow's cast check the rest: an id whose first byte is 1-9
    (or that is "0") and that casts is canonical, since after the first
    byte the cast accepts digits only (a sign or "0x" can only come first).
    Casting back to strings and comparing said the same at 3.5x the cost
    (4,000 ids: 277 µs, now 78 µs; bench/batchlog_read.py times the whole
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
    process and probed per batch. bench/batchlog_read.py times both."""

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


def _read_entry(reader: ipc.RecordBatchFileReader) -> tuple[pa.Table, dict[str, Any]]:
    return reader.read_all(), _entry_stats(reader)


def _map(path: str) -> pa.BufferReader:
    """path's pages, mapped read-only, as a zero-copy reader; the mapping
    lives as long as a buffer read from it.

    Not pa.memory_map: its every read advises the kernel to read the range
    ahead (MADV_WILLNEED), and the IPC reader reads each batch whole, so
    counting an entry's rows or taking its ack ids walked all of its cached
    pages: 7-9 ms of system time per 400 MB entry, both for every entry of
    every micro-batch, ~2% of a Spark run's CPU. Through a plain mapping
    only the pages read are touched: 0.7 and 2.6 ms (bench/batchlog_read.py)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:  # mmap refuses it; the IPC reader names the problem
            return pa.BufferReader(b"")
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return pa.BufferReader(pa.py_buffer(m))


def _entry_stats(reader: ipc.RecordBatchFileReader) -> dict[str, Any]:
    """The task's counters: the custom metadata of the entry's last batch."""
    if not reader.num_record_batches:
        return {}
    _, meta = reader.get_batch_with_custom_metadata(reader.num_record_batches - 1)
    return json.loads(meta[STATS_KEY]) if meta and STATS_KEY in meta else {}


class EntryWriter:
    """Appends a task's batches to a temporary file as they are handed out;
    publish() makes the entry visible in one step (first writer wins). The
    counters go last, as the custom metadata of a final empty batch.

    The file is written by a thread of its own (pyarrow writes without the
    GIL), so the task yields a batch to Spark while the previous ones are
    still being written; publish() and abort() wait for it, and a failed
    write fails publish(). The batches waiting to be written are bounded in
    bytes (max_queue_bytes, but always at least one batch): they are memory
    the worker holds, and a count of batches would let 1 MB payloads (8 MiB
    lots) queue 64 MiB."""

    def __init__(self, log: BatchLog, gen: str, batch: int, part: int, max_queue_bytes: int = 16 << 20) -> None:
        self.log = log
        self.final = log.entry_path(gen, batch, part)
        self._dir = log.batch_dir(gen, batch)
        self.tmp = f"{self.final}{_TMP_MARK}{uuid.uuid4().hex}"
        self._gen = gen
        self._reused: Any = None  # a spare's file, overwritten in place (spare_entries.py)
        self._ids: list[pa.Array] = []  # the message ids written, for the entry's ids file
        self.ids_file = f"{self.final}{_IDS_MARK}{uuid.uuid4().hex}"
        self._sink: Any = None
        self._w: ipc.RecordBatchFileWriter | None = None
        self._schema: pa.Schema | None = None
        self._queue: queue.Queue[tuple[pa.RecordBatch, pa.Array, pa.Array] | None] = queue.Queue()
        self._max_queue_bytes = max_queue_bytes
        self._queued_bytes = 0
        self._room = threading.Condition()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _open(self, schema: pa.Schema) -> None:
        self.log.fs.create_dir(self._dir, recursive=True)
        self._schema = schema.append(pa.field(ACK_COLUMN, pa.string()))
        if self.log._local and spare_entries.claim(self.log.root, self._gen, self.tmp):
            # Opened without truncating: its pages are reused, not freed and
            # allocated again. publish() cuts off what is left past the end.
            self._reused = open(self.tmp, "r+b", buffering=0)
            self._sink = pa.output_stream(self._reused, buffer_size=_WRITE_BUFFER)
        else:
            self._sink = self.log.fs.open_output_stream(self.tmp, buffer_size=_WRITE_BUFFER)
        self._w = ipc.new_file(self._sink, self._schema)

    def write(self, batch: pa.RecordBatch, ack_ids: pa.Array, message_ids: pa.Array) -> None:
        """Queues batch (with its ack ids and message ids) to be appended to the entry."""
        if self._error is not None:
            raise self._error
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="pubsub-go-batchlog", daemon=True)
            self._thread.start()
        size = batch.nbytes
        with self._room:
            # No timeout needed: the writer thread always takes the queue
            # down (a failed write drops the rest, see _drain).
            self._room.wait_for(lambda: not self._queued_bytes or self._queued_bytes + size <= self._max_queue_bytes)
            self._queued_bytes += size
        self._queue.put((batch, ack_ids, message_ids))

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                if self._error is None:  # after a failure keep taking, so write() never blocks
                    self._append(*item)
            except BaseException as e:
                self._error = e
            finally:
                with self._room:
                    self._queued_bytes -= item[0].nbytes
                    self._room.notify_all()

    def _append(self, batch: pa.RecordBatch, ack_ids: pa.Array, message_ids: pa.Array) -> None:
        if self._w is None:
            self._open(batch.schema)
        assert self._w is not None and self._schema is not None
        self._w.write_batch(pa.RecordBatch.from_arrays([*batch.columns, ack_ids], schema=self._schema))
        self._ids.append(detached(message_ids))

    def _finish_writes(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error

    def publish(self, schema: pa.Schema, stats: dict[str, Any]) -> bool:
        """Closes and publishes the entry; False if another attempt's entry exists."""
        self._finish_writes()
        if self._w is None:
            self._open(schema)
        assert self._w is not None and self._schema is not None
        ids = pa.concat_arrays(self._ids) if self._ids else pa.array([], pa.string())
        ids_schema = pa.schema([pa.field(MESSAGE_ID_COLUMN, pa.string())])
        with self.log.fs.open_output_stream(self.ids_file) as sink, ipc.new_file(sink, ids_schema) as w:
            w.write_batch(pa.record_batch([ids], schema=ids_schema))
        empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in self._schema], schema=self._schema)
        self._w.write_batch(empty, custom_metadata={STATS_KEY: json.dumps(stats).encode(),
                                                    IDS_KEY: os.path.basename(self.ids_file).encode()})
        self._w.close()
        if self._reused is not None:
            self._sink.flush()
            self._reused.truncate(self._reused.tell())
        self._sink.close()
        self._w = None
        if self.log._publish(self.tmp, self.final):
            return True
        self.log._discard(self.ids_file)  # another attempt's entry names its own
        return False

    def abort(self) -> None:
        try:
            self._finish_writes()
        except BaseException:
            pass  # the entry is discarded anyway
        if self._w is not None:
            try:
                self._w.close()
                self._sink.close()
            except Exception:
                pass
            self._w = None
        self.log._discard(self.tmp)
        self.log._discard(self.ids_file)
