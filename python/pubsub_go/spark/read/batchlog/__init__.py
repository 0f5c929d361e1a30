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
never replays a stale entry of an old one.

One job a module:
- entry_format.py: what an entry file holds (columns, metadata keys, names);
- store.py: BatchLog, the entries of a location: paths, listing, publishing,
  removal;
- reads.py: reading an entry, memory-mapped (the driver) or copied, and the
  check that a read did not race the entry's removal;
- writer.py: EntryWriter, a task's entry written by a thread of its own;
- recorded_ids.py: the message ids of published entries, indexed, so tasks
  drop redeliveries;
- marks.py: what processes tell each other through the log (the lease
  hand-over, the query's stop, its last activity);
- spares.py: on a local file system removed entries' files are reused.
"""

from .entry_format import ACK_COLUMN, IDS_KEY, MESSAGE_ID_COLUMN, STATS_KEY, Entry, detached
from .recorded_ids import RecordedIds, _IdIndex
from .store import BatchLog, _open_fs  # _open_fs: id_window.py opens its files where the log's are
from .writer import EntryWriter

__all__ = ["ACK_COLUMN", "IDS_KEY", "MESSAGE_ID_COLUMN", "STATS_KEY", "BatchLog", "Entry", "EntryWriter",
           "RecordedIds", "_IdIndex", "_open_fs", "detached"]
