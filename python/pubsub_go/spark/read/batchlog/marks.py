"""What processes tell each other through the batch log: marks that are
files, and times read off the log's directories.

- <entry>.leased: the task handed the entry's leases over (task.py), so the
  driver need not set them again when it first sees the batch (leases.py).
- <gen>/_stopped: the driver stopped the query (its mtime says when), so
  executors close the subscribers its tasks kept (subscriber_pool.py).
- last_activity: when the query last did something in the log, so a pooled
  subscriber is kept while its query runs (subscriber_pool.py).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from .entry_format import TMP_MARK

if TYPE_CHECKING:
    from .store import BatchLog

_HANDED_OVER_MARK = ".leased"
_STOPPED = "_stopped"


def mark_handed_over(log: BatchLog, gen: str, batch: int, part: int) -> None:
    """Records that the entry's leases were set to commitLeaseSeconds."""
    with log.fs.open_output_stream(log.entry_path(gen, batch, part) + _HANDED_OVER_MARK):
        pass


def handed_over(log: BatchLog, path: str) -> bool:
    """Whether the task that published the entry at path handed its leases over."""
    return log.fs.get_file_info(path + _HANDED_OVER_MARK).type != pafs.FileType.NotFound


def _stopped_path(log: BatchLog, gen: str) -> str:
    return f"{log.root}/{gen}/{_STOPPED}"


def mark_stopped(log: BatchLog, gen: str) -> None:
    """Records that the query stopped now (the driver, at stop); also for a
    query whose tasks have written nothing yet."""
    log.fs.create_dir(f"{log.root}/{gen}", recursive=True)
    with log.fs.open_output_stream(_stopped_path(log, gen)):
        pass


def clear_stopped(log: BatchLog, gen: str) -> None:
    """Removes the mark of an earlier stop (the driver of a new run)."""
    try:
        log.fs.delete_file(_stopped_path(log, gen))
    except FileNotFoundError:
        pass


def stopped_at(log: BatchLog, gen: str) -> float | None:
    """When the query last stopped, in time.time() seconds; None if it
    never did (or the store keeps no times)."""
    info = log.fs.get_file_info(_stopped_path(log, gen))
    if info.type == pafs.FileType.NotFound or info.mtime is None:
        return None
    return info.mtime.timestamp()


def last_activity(log: BatchLog, gen: str) -> float | None:
    """When the query last did something in the log of gen, in time.time()
    seconds: now while a task of the newest batch is writing its entry (it
    has handed rows to Spark; its temporary file exists), else the newest
    change to the log's directories: a task's first row or its entry's
    publication (the batch's directory), the driver's removal of a committed
    batch (gen's directory), which fills the gap before the next batch's
    tasks write. None: nothing to tell by. On object stores (gs://)
    directories have no times and a file being written is not listed: there
    it is None."""
    gen_dir = log.fs.get_file_info(f"{log.root}/{gen}")
    if gen_dir.type == pafs.FileType.NotFound:
        return None
    times = [gen_dir.mtime.timestamp()] if gen_dir.mtime is not None else []
    dirs = log.batch_dirs(gen)
    if dirs:
        newest = max(dirs, key=lambda d: d[0])[1]
        sel = pafs.FileSelector(newest.path, allow_not_found=True)
        if any(TMP_MARK in os.path.basename(i.path) for i in log.fs.get_file_info(sel)):
            return time.time()
        if newest.mtime is not None:
            times.append(newest.mtime.timestamp())
    return max(times) if times else None
