"""`idAttribute`: a message whose attribute value was already delivered
within the last `idAttributeWindowSeconds` is dropped (and acked), as
Beam's PubsubIO.withIdAttribute drops a publisher's retries.

The window's state lives in the batch log, beside the query's entries:
each task that records an entry writes the ids it delivered to
`<batchLogLocation>/_id_window/<gen>-<batch>-<part>.arrow` (one string
column), after the entry is published. A task reads every such file not
older than the window (by its modification time; older ones are deleted by
whichever task finds them) before it pulls, so the window spans
micro-batches, generations and restarts of the query. A worker keeps the
files it read (they never change), so a task reads only the new ones.

Bounds and limits (docs/source.md, "Deduplicating by an id attribute"):
- age: ids are kept `idAttributeWindowSeconds` (default 600 s, Dataflow's
  window for Beam's idAttribute) from when their entry was written;
- two copies taken in the same micro-batch by different tasks are both
  delivered (neither task has written its file yet); within one task the
  second is dropped;
- a task that fails after publishing its entry but before writing its ids
  leaves them out of the window.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...option_table import SOURCE, table, text
from ...optparse import OptionError

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger("pubsub_go.source")

DEFAULT_WINDOW_S = table(SOURCE).default("idAttributeWindowSeconds")
DIR = "_id_window"

# Files this worker has read: path -> ids. They are immutable once written.
_CACHE: dict[str, list[str]] = {}
_CACHE_LOCK = threading.Lock()


@dataclass(frozen=True)
class IdWindowOptions:
    attribute: str
    window_s: int

    @staticmethod
    def parse(opts: Mapping[str, str]) -> IdWindowOptions | None:
        attr = text(opts, "idAttribute")
        if attr is None:
            if "idattributewindowseconds" in opts:
                raise OptionError("option idAttributeWindowSeconds needs idAttribute (the attribute that "
                                  "carries each message's id)")
            return None
        return IdWindowOptions(attr, table(SOURCE).value(opts, "idAttributeWindowSeconds"))


class IdFilter:
    """One task's view of the window: the ids delivered before it, plus
    the ones it delivers."""

    def __init__(self, opts: IdWindowOptions, location: str) -> None:
        from ..batchlog import _open_fs

        self.opts = opts
        self.fs, root = _open_fs(location)
        self.dir = f"{root}/{DIR}"
        self.seen: set[str] = set()
        self.new: list[str] = []
        self._load()

    def _load(self) -> None:
        import pyarrow.fs as pafs

        cutoff = time.time() - self.opts.window_s
        infos = self.fs.get_file_info(pafs.FileSelector(self.dir, allow_not_found=True))
        for info in infos:
            if not info.path.endswith(".arrow"):
                continue
            mtime = info.mtime.timestamp() if info.mtime is not None else time.time()
            if mtime < cutoff:
                try:
                    self.fs.delete_file(info.path)
                except OSError:
                    pass  # another task removed it first
                with _CACHE_LOCK:
                    _CACHE.pop(info.path, None)
                continue
            with _CACHE_LOCK:
                ids = _CACHE.get(info.path)
            if ids is None:
                try:
                    ids = self._read(info.path)
                except (OSError, FileNotFoundError):
                    continue  # expired and removed meanwhile
                with _CACHE_LOCK:
                    _CACHE[info.path] = ids
            self.seen.update(ids)

    def _read(self, path: str) -> list[str]:
        import pyarrow as pa

        with self.fs.open_input_file(path) as f:
            return pa.ipc.open_file(f).read_all().column(0).to_pylist()

    def keep(self, attributes: pa.Array) -> pa.Array | None:
        """A mask of the rows to keep (None: all): a row whose id was
        delivered before, or earlier in this task, is dropped; a row
        without the attribute is kept."""
        import pyarrow as pa
        import pyarrow.compute as pc

        values = pc.map_lookup(attributes, pa.scalar(self.opts.attribute, pa.string()), "first").to_pylist()
        mask = []
        dropped = False
        for v in values:
            if v is None:
                mask.append(True)
            elif v in self.seen:
                mask.append(False)
                dropped = True
            else:
                self.seen.add(v)
                self.new.append(v)
                mask.append(True)
        return pa.array(mask, pa.bool_()) if dropped else None

    def record(self, gen: str, batch: int, part: int) -> None:
        """After the task's entry is published: its ids join the window."""
        import pyarrow as pa

        name = f"{self.dir}/{gen}-{batch:020d}-{part:05d}.arrow"
        tmp = f"{self.dir}/.{uuid.uuid4().hex}.tmp"
        try:
            self.fs.create_dir(self.dir, recursive=True)
            table = pa.table({"id": pa.array(self.new, pa.string())})
            with self.fs.open_output_stream(tmp) as out, pa.ipc.new_file(out, table.schema) as w:
                w.write_table(table)
            self.fs.move(tmp, name)
        except OSError as e:  # the rows are recorded; only later copies of these ids may pass
            log.warning("idAttribute: recording %d ids of batch %d partition %d failed: %s", len(self.new),
                        batch, part, e)
            return
        with _CACHE_LOCK:
            _CACHE[name] = list(self.new)
