"""A task's entry, written batch by batch as the task hands rows to Spark,
by a thread of its own, and published in one step."""

from __future__ import annotations

import json
import os
import queue
import threading
import uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.ipc as ipc

from . import spares
from .entry_format import ACK_COLUMN, IDS_KEY, IDS_MARK, MESSAGE_ID_COLUMN, STATS_KEY, TMP_MARK, detached

if TYPE_CHECKING:
    from .store import BatchLog

# The IPC writer writes each buffer of a batch, and each buffer's padding,
# separately: ~22 write(2) calls per 1,000-row batch of the raw schema. A
# buffer this size coalesces the small ones; larger writes (the payload
# values) pass straight through.
_WRITE_BUFFER = 64 << 10


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
        self.tmp = f"{self.final}{TMP_MARK}{uuid.uuid4().hex}"
        self._gen = gen
        self._reused: Any = None  # a spare's file, overwritten in place (spares.py)
        self._ids: list[pa.Array] = []  # the message ids written, for the entry's ids file
        self.ids_file = f"{self.final}{IDS_MARK}{uuid.uuid4().hex}"
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
        if self.log.local and spares.claim(self.log.root, self._gen, self.tmp):
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
        if self.log.publish(self.tmp, self.final):
            return True
        self.log.discard(self.ids_file)  # another attempt's entry names its own
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
        self.log.discard(self.tmp)
        self.log.discard(self.ids_file)
