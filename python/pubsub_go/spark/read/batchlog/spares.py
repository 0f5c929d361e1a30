"""Spare entry files: a local batch log reuses committed entries' files.

Every row a task hands to Spark is written once to its entry, and the
driver removes the entry once the batch is committed and acked, about a
second later. On a local file system creating and deleting ~200 MB per task
is most of what the log costs: each new page of the file is allocated,
zeroed and reserved by the file system, and removing the file frees them
all again: together about 5% of the machine's CPU at 1 KB (bench/tools/spark_cpu.py
pubsub-go-defaults --perf). So the driver renames a committed entry into
<gen>/.spare/ instead of deleting it, and a task that starts an entry claims
a spare by renaming it to its temporary name and overwrites it in place:
the pages are already there.

Why this is safe:
- A spare is claimed by rename(2), atomic: two tasks never get the same.
- A committed entry's path never comes back (a committed batch is never
  run again), so a reader that finds the path still naming the inode it
  read, after reading, has read the entry and not a later reuse of its
  file (reads.unchanged). Only the driver maps entries, and
  it removes them under the lock it reads them with: a task's mapping of a
  file cut short by its reuse would fault (SIGBUS).
- Object stores and HDFS cannot overwrite in place; there entries are
  created and deleted as before.

The spares are bounded (MAX_SPARES) and removed when the query stops; a
killed driver leaves them for its restart, which reuses them.
"""

from __future__ import annotations

import os
import uuid

DIR = ".spare"
# Enough for every task of the next batch or two of a query with a few
# partitions: a batch's tasks start while the previous batch is committed.
# Beyond it a committed entry is deleted, so the spares never hold more
# than this many entries' bytes of disk.
MAX_SPARES = 8


def spare_dir(root: str, gen: str) -> str:
    return f"{root}/{gen}/{DIR}"


def keep(root: str, gen: str, entries: list[str]) -> list[str]:
    """Moves entries into the spares while there is room; returns the ones left."""
    d = spare_dir(root, gen)
    os.makedirs(d, exist_ok=True)
    room = MAX_SPARES - len(os.listdir(d))
    left = []
    for path in entries:
        if room <= 0:
            left.append(path)
            continue
        try:
            os.rename(path, f"{d}/{uuid.uuid4().hex}")
            room -= 1
        except FileNotFoundError:
            pass
    return left


def claim(root: str, gen: str, target: str) -> bool:
    """Renames a spare to target; False if there is none."""
    d = spare_dir(root, gen)
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return False
    for name in names:
        try:
            os.rename(f"{d}/{name}", target)
            return True
        except FileNotFoundError:  # another task claimed it first
            continue
    return False


def drop(root: str, gen: str) -> None:
    """Deletes gen's spares (the query stopped)."""
    d = spare_dir(root, gen)
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return
    for name in names:
        try:
            os.unlink(f"{d}/{name}")
        except FileNotFoundError:
            pass
    try:
        os.rmdir(d)
    except OSError:
        pass  # a file was added meanwhile: it goes with the next drop
