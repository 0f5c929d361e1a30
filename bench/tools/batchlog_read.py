"""What reading one batch-log entry costs. The driver reads the row count
(`BatchLog.read_summary`) and the ack ids (`read_path(mapped=True)`) of
every entry of every micro-batch: through the log's own mapping and through
pa.memory_map (which advises the kernel to read ahead every range read).
A task indexes the message ids of every published entry once per worker
(`_IdIndex`) and checks each batch it pulls against them
(`RecordedIds.mask`, pull.py's duplicate check). Writes an entry like a
Spark task's at 1 KB (100 batches of 4,000 rows with Pub/Sub-like message
ids, ~430 MB) and prints the wall, user and system time per call.

    python bench/tools/batchlog_read.py [--batches 100] [--rows 4000] [--reps 20] [--dir DIR]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402

from pubsub_go.spark.read.batchlog import BatchLog, RecordedIds, _IdIndex  # noqa: E402

# A Pub/Sub message id: a canonical decimal integer of 16 digits.
FIRST_ID = 2070443601311540


def timed(fn: Callable[[], object], reps: int) -> tuple[float, float, float]:
    """ms per call: wall, user, system."""
    fn()
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(reps):
        fn()
    r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    return tuple(1e3 * x / reps for x in (t1 - t0, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dir", help="where to write the entry (default: a temporary directory under /tmp)")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="pubsub-go-batchlog-read-", dir=a.dir)
    try:
        log = BatchLog(root)
        rows = a.rows
        b = pa.record_batch([pa.array([b"x" * 1024] * rows, pa.binary()),
                             pa.array([str(FIRST_ID + i) for i in range(rows)])], names=["data", "message_id"])
        acks = pa.array([f"ack-{i:030d}" for i in range(rows)])
        w = log.writer("g", 1, 0)
        for k in range(a.batches):
            w.write(b, acks, pa.array([str(FIRST_ID + k * rows + i) for i in range(rows)]))
        w.publish(b.schema, {})
        path = log.entry_path("g", 1, 0)
        print(f"entry: {a.batches} batches of {rows:,} rows, {Path(path).stat().st_size / 1e6:,.0f} MB", flush=True)

        def via_memory_map(read_acks: bool) -> object:
            with pa.memory_map(path) as f:
                r = ipc.open_file(f)
                if read_acks:
                    t = r.read_all()
                    return t.column(t.num_columns - 1).combine_chunks()
                return sum(r.get_batch(i).num_rows for i in range(r.num_record_batches))

        cases = [("row count, BatchLog.read_summary", lambda: log.read_summary(path)),
                 ("row count, pa.memory_map", lambda: via_memory_map(False)),
                 ("ack ids, BatchLog.read_path(mapped=True)", lambda: log.read_path(path, mapped=True).ack_ids),
                 ("ack ids, pa.memory_map", lambda: via_memory_map(True))]
        # A pulled batch of new messages (none recorded), as pull.py checks it.
        recorded = RecordedIds([_IdIndex(log.read_message_ids(path))])
        pulled = pa.array([str(FIRST_ID + a.batches * rows + i) for i in range(rows)])
        cases += [("message ids indexed, _IdIndex (a task, once per entry)",
                   lambda: _IdIndex(log.read_message_ids(path))),
                  (f"a pulled batch of {rows:,} checked, RecordedIds.mask (a task, per batch)",
                   lambda: recorded.mask(pulled))]
        print("| read | wall ms | user ms | system ms |\n|---|---|---|---|")
        for name, fn in cases:
            wall, user, sys_ = timed(fn, a.reps)
            print(f"| {name} | {wall:.2f} | {user:.2f} | {sys_:.2f} |", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
