"""The message ids a task must drop as redeliveries of recorded messages
(BatchLog.recorded_message_ids), looked up per batch at the cost of the
batch's own rows.

`pc.is_in(batch_ids, value_set=recorded)` builds a hash table of every
recorded id on each call: with a streaming query's last micro-batches
recorded (hundreds of thousands of ids), that was the largest per-row cost
of a task (bench/decode_results.md). The set is built once per task
instead, on the first lookup."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


class RecordedIds:
    """Recorded message ids (a utf8 array), with a set built on first use."""

    def __init__(self, ids: pa.Array) -> None:
        self.ids = ids
        self._set: frozenset[str] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def is_in(self, message_ids: pa.Array) -> pa.Array:
        """A boolean mask of the message ids that are recorded, as
        `pc.is_in(message_ids, value_set=self.ids)`."""
        if self._set is None:
            self._set = frozenset(self.ids.to_pylist())
        found = [m for m in message_ids.to_pylist() if m in self._set]
        return pc.is_in(message_ids, value_set=pa.array(found, pa.string()))
