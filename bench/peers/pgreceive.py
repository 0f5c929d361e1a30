"""pubsub_go's Subscriber pulling into pyarrow batches and acking each
batch, measured over a fixed window after a warm-up; prints one JSON line
(the same fields as goreceive, plus max_rss_mb).

    python bench/peers/pgreceive.py --emulator-host H:P \
        --subscription projects/p/subscriptions/s --warmup 2 --duration 5
"""

from __future__ import annotations

import argparse
import sys
import time

from peerlib import cpu_seconds, report


def payload_bytes(batch) -> int:
    col = batch.column("payload")
    if len(col) == 0:
        return 0
    # Read the two end offsets straight from the offsets buffer (no copy).
    offs = memoryview(col.buffers()[1]).cast("i")
    return offs[col.offset + len(col)] - offs[col.offset]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulator-host", required=True)
    ap.add_argument("--subscription", required=True)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--max-outstanding", type=int, default=10000)
    ap.add_argument("--max-outstanding-bytes", type=int, default=256 << 20)
    a = ap.parse_args()

    from pubsub_go.client import Subscriber

    sub = Subscriber(subscription=a.subscription, emulator_host=a.emulator_host, streams=a.streams,
                     max_outstanding_messages=a.max_outstanding, max_outstanding_bytes=a.max_outstanding_bytes,
                     batch_size=a.batch_size)
    msgs = nbytes = 0
    start = time.monotonic()
    t_end_warm = start + a.warmup
    edge = None  # (msgs, bytes, cpu, t) at the window start
    try:
        while True:
            batch, ids = sub.next_batch(a.batch_size, 100)
            if len(ids):
                sub.ack(ids)
            msgs += batch.num_rows
            nbytes += payload_bytes(batch)
            now = time.monotonic()
            if edge is None and now >= t_end_warm:
                edge = (msgs, nbytes, cpu_seconds(), now)
            elif edge is not None and now >= edge[3] + a.duration:
                break
        cpu = cpu_seconds() - edge[2]
        secs = now - edge[3]
    finally:
        sub.close()
    n, b = msgs - edge[0], nbytes - edge[1]
    report("pubsub-go", n, b, secs, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
