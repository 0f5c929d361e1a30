"""Google's Python publisher (google-cloud-pubsub PublisherClient, default
batching) publishing N messages of S bytes and waiting for every future;
prints one JSON line (gopublish's fields plus max_rss_mb)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from peerlib import cpu_seconds, report


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulator-host", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    os.environ["PUBSUB_EMULATOR_HOST"] = a.emulator_host

    from google.cloud import pubsub_v1

    client = pubsub_v1.PublisherClient()
    data = bytes(97 + i % 26 for i in range(a.size))
    client.publish(a.topic, data).result(timeout=60)  # connect before the clock starts
    cpu0, t0 = cpu_seconds(), time.monotonic()
    futures = [client.publish(a.topic, data) for _ in range(a.messages)]
    errors = 0
    for f in futures:
        try:
            f.result(timeout=max(1.0, a.timeout - (time.monotonic() - t0)))
        except Exception:
            errors += 1
    secs, cpu = time.monotonic() - t0, cpu_seconds() - cpu0
    ok = a.messages - errors
    report("google-python-publish", ok, ok * a.size, secs, cpu, errors=errors)
    client.stop()
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
