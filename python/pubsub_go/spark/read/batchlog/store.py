"""BatchLog: the entries of a batch log location (see the package's
docstring): their paths, listing, publishing and removal; reading,
writing, the recorded ids and the marks are in modules of their own, and
reached from here."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from . import marks, reads, recorded_ids, spares
from .entry_format import Entry
from .writer import EntryWriter


def _open_fs(location: str) -> tuple[pafs.FileSystem, str]:
    if "://" in location:
        return pafs.FileSystem.from_uri(location)
    return pafs.LocalFileSystem(), os.path.abspath(location)


class BatchLog:
    def __init__(self, location: str) -> None:
        self.location = location
        self.fs, self.root = _open_fs(location)
        # Only a local file system reuses entries' files (spares.py) and
        # publishes by link(2).
        self.local = isinstance(self.fs, pafs.LocalFileSystem)

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
        """The entry at path (reads.read_entry: mapped only by the driver)."""
        return reads.read_entry(self.fs, path, mapped=mapped)

    def read_message_ids(self, path: str) -> pa.Array:
        return reads.read_message_ids(self.fs, path)

    def read_summary(self, path: str) -> tuple[int, dict[str, Any]]:
        return reads.read_summary(self.fs, path)

    def writer(self, gen: str, batch: int, part: int, max_queue_bytes: int = 16 << 20) -> EntryWriter:
        """An entry written batch by batch, invisible until published."""
        return EntryWriter(self, gen, batch, part, max_queue_bytes)

    def recorded_message_ids(self, gen: str) -> recorded_ids.RecordedIds:
        return recorded_ids.recorded_message_ids(self, gen)

    def publish(self, tmp: str, final: str) -> bool:
        """Makes the written file tmp the entry final; False if final exists."""
        if self.local:
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

    def discard(self, path: str) -> None:
        try:
            self.fs.delete_file(path)
        except (FileNotFoundError, OSError):
            pass

    # -- driver --------------------------------------------------------------
    def entry_paths(self, gen: str, batch: int) -> list[str]:
        """The published entries of a batch (temporary files excluded)."""
        sel = pafs.FileSelector(self.batch_dir(gen, batch), allow_not_found=True)
        return sorted(i.path for i in self.fs.get_file_info(sel) if i.path.endswith(".arrow"))

    def batches(self, gen: str) -> list[int]:
        return sorted(batch for batch, _ in self.batch_dirs(gen))

    def batch_dirs(self, gen: str) -> list[tuple[int, pafs.FileInfo]]:
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
        files become spares for the next tasks (spares.py)."""
        d = self.batch_dir(gen, batch)
        if self.local:
            spares.keep(self.root, gen, self.entry_paths(gen, batch))
        if self.fs.get_file_info(d).type != pafs.FileType.NotFound:
            self.fs.delete_dir(d)

    def drop_spares(self, gen: str) -> None:
        """Deletes the spare files of gen (the query stopped)."""
        if self.local:
            spares.drop(self.root, gen)

    # -- marks (marks.py) ----------------------------------------------------
    def mark_handed_over(self, gen: str, batch: int, part: int) -> None:
        marks.mark_handed_over(self, gen, batch, part)

    def handed_over(self, path: str) -> bool:
        return marks.handed_over(self, path)

    def mark_stopped(self, gen: str) -> None:
        marks.mark_stopped(self, gen)

    def clear_stopped(self, gen: str) -> None:
        marks.clear_stopped(self, gen)

    def stopped_at(self, gen: str) -> float | None:
        return marks.stopped_at(self, gen)

    def last_activity(self, gen: str) -> float | None:
        return marks.last_activity(self, gen)
