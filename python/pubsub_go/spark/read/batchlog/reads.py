"""Reading a published entry: memory-mapped by the driver, copied by
everyone else, and checked against the entry's removal.

A removed entry's file may be reused (spares.py): only the driver, which
removes entries under the lock it reads them with, may map one, since a
mapping of a file that is then cut short faults (SIGBUS) when read past its
new end. Everyone else reads (copies) the file, and a read that raced the
removal fails or is caught by the check afterwards (unchanged())."""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from .entry_format import ACK_COLUMN, IDS_KEY, Entry, entry_stats, last_batch_metadata


def _local(fs: pafs.FileSystem) -> bool:
    return isinstance(fs, pafs.LocalFileSystem)


def read_entry(fs: pafs.FileSystem, path: str, *, mapped: bool = False) -> Entry:
    """The entry at path; FileNotFoundError if it was removed (its batch
    committed) before or while it was read. mapped (local file systems):
    memory-map the file, so reading a few columns touches only their pages;
    only for the driver (see the module's docstring)."""
    with contextlib.ExitStack() as stack:
        if not mapped:
            stack.enter_context(unchanged(fs, path))
        f = stack.enter_context(_open(fs, path, mapped=mapped))
        reader = ipc.open_file(f)
        table, stats = reader.read_all(), entry_stats(reader)
    idx = table.schema.get_field_index(ACK_COLUMN)
    acks = table.column(idx).combine_chunks() if table.num_rows else pa.array([], pa.string())
    return Entry(data=table.remove_column(idx).replace_schema_metadata(None), ack_ids=acks, stats=stats)


def read_message_ids(fs: pafs.FileSystem, path: str) -> pa.Array:
    """The message ids of the entry at path, from the file its last batch
    names (only the footer and that empty batch of the entry are read);
    FileNotFoundError if the entry was removed before or while it was read."""
    with unchanged(fs, path), _open(fs, path) as f:
        meta = last_batch_metadata(ipc.open_file(f))
        ids_file = meta.get(IDS_KEY) if meta else None
    if ids_file is None:
        raise ValueError(f"batch log entry {path} names no message ids file ({IDS_KEY.decode()}): it was "
                         "written by a development build before 0.1.0, whose entries cannot be replayed; "
                         "remove the batch log directory (batchLogLocation) and the query's checkpoint")
    # Checked above: ids_file is this entry's. It is never reused, and
    # removed only with the entry (FileNotFoundError: committed).
    with _open(fs, f"{os.path.dirname(path)}/{ids_file.decode()}") as f:
        ids = ipc.open_file(f).read_all().column(0)
    return ids.combine_chunks() if ids.num_chunks else pa.array([], pa.string())


def read_summary(fs: pafs.FileSystem, path: str) -> tuple[int, dict[str, Any]]:
    """The entry's row count and counters, from its footer and record
    batch headers only (no column is read). For the driver, which removes
    entries under the lock it reads them with."""
    with _open(fs, path, mapped=True) as f:
        reader = ipc.open_file(f)
        rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
        return rows, entry_stats(reader)


def _open(fs: pafs.FileSystem, path: str, *, mapped: bool = False) -> Any:
    """path for reading; mapped (local file systems only): memory-mapped."""
    if not _local(fs):
        return fs.open_input_file(path)
    return _map(path) if mapped else pa.OSFile(path)


def _map(path: str) -> pa.BufferReader:
    """path's pages, mapped read-only, as a zero-copy reader; the mapping
    lives as long as a buffer read from it.

    Not pa.memory_map: its every read advises the kernel to read the range
    ahead (MADV_WILLNEED), and the IPC reader reads each batch whole, so
    counting an entry's rows or taking its ack ids walked all of its cached
    pages: 7-9 ms of system time per 400 MB entry, both for every entry of
    every micro-batch, ~2% of a Spark run's CPU. Through a plain mapping
    only the pages read are touched: 0.7 and 2.6 ms (bench/tools/batchlog_read.py)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:  # mmap refuses it; the IPC reader names the problem
            return pa.BufferReader(b"")
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return pa.BufferReader(pa.py_buffer(m))


@contextlib.contextmanager
def unchanged(fs: pafs.FileSystem, path: str) -> Iterator[None]:
    """Turns a read of path that raced the entry's removal into FileNotFoundError.

    A removed entry's file may be reused and rewritten (spares.py) while it
    is read: the read then fails on what it finds, or succeeds with another
    entry's data. Either way, if the path no longer names the file read, the
    entry was removed: its batch was committed. The check is sound because a
    removed entry's path never comes back (a committed batch never runs
    again) and its file only changes after its removal."""
    file_id = os.stat(path).st_ino if _local(fs) else None
    try:
        yield
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as e:
        if not _same_file(path, file_id):
            raise FileNotFoundError(path) from e
        raise
    if not _same_file(path, file_id):
        raise FileNotFoundError(path)


def _same_file(path: str, file_id: int | None) -> bool:
    if file_id is None:
        return True  # not local: files are never reused
    try:
        return os.stat(path).st_ino == file_id
    except FileNotFoundError:
        return False
