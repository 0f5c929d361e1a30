"""Google's Python client (google-cloud-pubsub streaming pull:
SubscriberClient().subscribe(sub, callback)) acking every message in the
callback, with flow control raised so it is not the cap; measured over a
fixed window after a warm-up. Prints one JSON line (goreceive's fields plus
max_rss_mb). Honours --emulator-host (sets PUBSUB_EMULATOR_HOST).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from peerlib import cpu_seconds, report


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulator-host", required=True)
    ap.add_argument("--subscription", required=True)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--max-outstanding", type=int, default=10000)
    ap.add_argument("--max-outstanding-bytes", type=int, default=256 << 20)
    a = ap.parse_args()
    os.environ["PUBSUB_EMULATOR_HOST"] = a.emulator_host

    from google.cloud import pubsub_v1

    lock = threading.Lock()
    counts = [0, 0]  # messages, bytes

    def callback(message) -> None:
        n = len(message.data)
        message.ack()
        with lock:
            counts[0] += 1
            counts[1] += n

    client = pubsub_v1.SubscriberClient()
    flow = pubsub_v1.types.FlowControl(max_messages=a.max_outstanding, max_bytes=a.max_outstanding_bytes)
    future = client.subscribe(a.subscription, callback, flow_control=flow)

    def sample() -> tuple[int, int, float, float]:
        with lock:
            m, b = counts
        return m, b, cpu_seconds(), time.monotonic()

    try:
        time.sleep(a.warmup)
        if future.done():
            future.result()  # raises the stream's error
        s0 = sample()
        time.sleep(a.duration)
        s1 = sample()
        if future.done():
            future.result()
    finally:
        future.cancel()
        try:
            future.result(timeout=10)
        except Exception:
            pass
        client.close()
    n, b, secs = s1[0] - s0[0], s1[1] - s0[1], s1[3] - s0[3]
    report("google-python", n, b, secs, s1[2] - s0[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
