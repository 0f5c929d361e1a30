"""pubsub_go's Publisher (no Spark) publishing N messages of S bytes as
Arrow batches and flushing; prints one JSON line (gopublish's fields plus
max_rss_mb)."""

from __future__ import annotations

import argparse
import sys
import time

from peerlib import cpu_seconds, report


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulator-host", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--batch-rows", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()

    import pyarrow as pa

    from pubsub_go.client import Publisher

    data = bytes(97 + i % 26 for i in range(a.size))
    batch = pa.RecordBatch.from_arrays([pa.array([data] * a.batch_rows, pa.binary())], names=["payload"])
    pub = Publisher(topic=a.topic, emulator_host=a.emulator_host)
    try:
        pub.publish(batch.slice(0, 1))  # connect before the clock starts
        pub.flush(60_000)
        cpu0, t0 = cpu_seconds(), time.monotonic()
        left = a.messages
        while left > 0:
            b = batch if left >= a.batch_rows else batch.slice(0, left)
            pub.publish(b)
            left -= b.num_rows
        stats = pub.flush(int(a.timeout * 1000))
        secs, cpu = time.monotonic() - t0, cpu_seconds() - cpu0
    finally:
        pub.close()
    n = a.messages
    report("pubsub-go-publish", n, n * a.size, secs, cpu, errors=0, flush=stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
