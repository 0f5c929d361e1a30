"""What a batch log entry file holds, and the names of the files beside it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

ACK_COLUMN = "__pubsub_go_ack_id"
# The entry's message ids, whatever columns the rows keep (schema mode may
# project message_id away): tasks drop redeliveries of recorded messages by
# them (recorded_ids.py). They are written to a small file of their own
# (one column of this name), named in the entry's last batch under IDS_KEY:
# a task reads the ids of every recorded entry, and reading them out of the
# entry would read (or map: see reads.py) the whole file.
MESSAGE_ID_COLUMN = "__pubsub_go_message_id"
STATS_KEY = b"pubsub_go.stats"
IDS_KEY = b"pubsub_go.ids_file"
# <entry>.ids-<uuid>: the entry's message ids.
IDS_MARK = ".ids-"
# An entry is written as <entry>.tmp-<uuid>, then linked or moved to <entry>.
TMP_MARK = ".tmp-"


@dataclass
class Entry:
    """One task's hand-out: the data, its ack ids (same order) and counters."""

    data: pa.Table
    ack_ids: pa.Array
    stats: dict[str, Any] = field(default_factory=dict)


def detached(column: pa.Array) -> pa.Array:
    """A copy of column that keeps nothing else alive: a column of an
    imported (or memory-mapped) batch holds the whole batch (or mapping)."""
    return pa.concat_arrays([column, column.slice(0, 0)])


def last_batch_metadata(reader: ipc.RecordBatchFileReader) -> Any:
    """The custom metadata of the entry's last (empty) batch, or None."""
    if not reader.num_record_batches:
        return None
    return reader.get_batch_with_custom_metadata(reader.num_record_batches - 1).custom_metadata


def entry_stats(reader: ipc.RecordBatchFileReader) -> dict[str, Any]:
    """The task's counters: the custom metadata of the entry's last batch."""
    meta = last_batch_metadata(reader)
    return json.loads(meta[STATS_KEY]) if meta and STATS_KEY in meta else {}
