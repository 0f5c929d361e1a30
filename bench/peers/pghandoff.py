"""The Go -> Python hand-off cost: times Subscriber.next_batch on messages
already buffered in the subscriber (stats()["held"] >= the batch size), so
the figure is handing over a batch the streams built as the messages
arrived: taking it, exporting it through the C Data Interface and importing
it into pyarrow, not waiting for the network. Also times the pyarrow-only
part (export + import of an identical batch, schema known, as next_batch
does after its first call) and a no-op native call (stats()), to split the
cost. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def summary(ns: list[int], rows: float) -> dict:
    us = [x / 1000 for x in ns]
    return {"rows": rows, "calls": len(us), "p50_us": pct(us, 50), "p99_us": pct(us, 99),
            "max_us": max(us), "p50_ns_per_row": pct(us, 50) * 1000 / rows,
            "p99_ns_per_row": pct(us, 99) * 1000 / rows}


def wait_held(sub, n: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sub.stats()["held"] >= n:
            return True
        time.sleep(0.002)
    return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulator-host", required=True)
    ap.add_argument("--subscription", required=True)
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()

    import pyarrow as pa

    from pubsub_go import _native
    from pubsub_go.client import Subscriber

    sizes = [int(s) for s in a.sizes.split(",")]
    per_fill = 5  # batches taken per fill of the subscriber
    out: dict = {"peer": "pubsub-go-handoff", "next_batch": {}, "next_batch_warm": {},
                 "next_batch_first": {}, "pyarrow_import": {}}
    sub = None
    try:
        for rows in sizes:
            # A subscriber per size: it builds its batches rows at a time as
            # messages arrive, which is what a steady consumer sees.
            if sub is not None:
                sub.close()
            sub = Subscriber(subscription=a.subscription, emulator_host=a.emulator_host,
                             max_outstanding_messages=per_fill * rows, max_outstanding_bytes=1 << 30,
                             batch_size=rows)
            calls = a.calls if rows < 10000 else max(20, a.calls // 4)
            times: list[int] = []
            got: list[int] = []  # rows per call
            warm: list[int] = []  # not the first call after a fill
            first: list[int] = []  # the first call after a fill
            while len(times) < calls + 3:  # the first 3 are warm-up
                # Fill the subscriber to its flow-control limit, so no
                # message arrives while next_batch is timed (handed-out
                # messages count until acked), then drain it batch by batch.
                if not wait_held(sub, per_fill * rows, 60):
                    raise RuntimeError(f"subscriber did not buffer {per_fill * rows} messages within 60 s")
                pending = []
                for i in range(per_fill):
                    t0 = time.perf_counter_ns()
                    batch, ids = sub.next_batch(rows, 1)
                    t1 = time.perf_counter_ns()
                    if batch.num_rows == 0:
                        raise RuntimeError(f"next_batch returned no rows with {per_fill * rows} buffered")
                    # Fewer than asked only at the library's batch limit
                    # (8 MiB of Arrow memory: ~7,500 rows of 1 KB).
                    got.append(batch.num_rows)
                    times.append(t1 - t0)
                    if len(times) > 3:
                        (warm if i > 0 else first).append(t1 - t0)
                    pending.append(ids)
                    del batch  # released: the next call reuses no memory of it
                sub.ack(pa.concat_arrays(pending))
            per_call = sum(got[3:]) / len(got[3:])
            out["next_batch"][str(rows)] = {**summary(times[3:], per_call), "rows_per_call": per_call}
            out["next_batch_warm"][str(rows)] = summary(warm, per_call)
            out["next_batch_first"][str(rows)] = summary(first, per_call)
            batch, ids = sub.next_batch(rows, 1000)
            sub.ack(ids)

            # pyarrow alone: export + import of the same batch and ack ids.
            f = _native.ffi()

            def ptr(c, f=f) -> int:
                return int(f.cast("uintptr_t", c))

            imp: list[int] = []
            for _ in range(calls + 3):
                arr, arr2 = f.new("struct ArrowArray*"), f.new("struct ArrowArray*")
                batch._export_to_c(ptr(arr))
                ids._export_to_c(ptr(arr2))
                t0 = time.perf_counter_ns()
                pa.RecordBatch._import_from_c(ptr(arr), batch.schema)
                pa.Array._import_from_c(ptr(arr2), pa.string())
                imp.append(time.perf_counter_ns() - t0)
            out["pyarrow_import"][str(rows)] = summary(imp[3:], rows)
        stats_ns = []
        for _ in range(200):
            t0 = time.perf_counter_ns()
            sub.stats()
            stats_ns.append(time.perf_counter_ns() - t0)
        out["stats_call"] = summary(stats_ns, 1)
    finally:
        if sub is not None:
            sub.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
