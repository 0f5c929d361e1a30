"""Memory drift of the pubsub_go pull loop: pulls (next_batch + ack) at a
paced rate for a long time and samples this process's resident set size.
A standalone process stands in for the executor's Python worker, which
runs the same loop inside Spark. Prints one JSON line with the samples.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulator-host", required=True)
    ap.add_argument("--subscription", required=True)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--rate", type=int, default=20_000, help="messages per second (0: as fast as possible)")
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--sample-every", type=float, default=5.0)
    a = ap.parse_args()

    from pubsub_go.client import Subscriber

    sub = Subscriber(subscription=a.subscription, emulator_host=a.emulator_host,
                     max_outstanding_messages=10 * a.batch_size, batch_size=a.batch_size)
    samples: list[list[float]] = []
    msgs = 0
    t0 = time.monotonic()
    next_sample = last = t0
    try:
        while True:
            now = time.monotonic()
            if now - last > 2.0:
                # The harness stopped this process (SIGSTOP) while another
                # section ran: that time is not part of the run.
                t0 += now - last
                next_sample += now - last
            last = now
            if now >= next_sample:
                samples.append([round(now - t0, 2), round(rss_mb(), 2), msgs])
                next_sample += a.sample_every
            if now - t0 >= a.seconds:
                break
            if a.rate and msgs > a.rate * (now - t0):
                time.sleep(max(0.0, min(0.05, msgs / a.rate - (now - t0))))
                continue
            batch, ids = sub.next_batch(a.batch_size, 100)
            if len(ids):
                sub.ack(ids)
            msgs += batch.num_rows
            del batch, ids
        ru = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        sub.close()
    print(json.dumps({"peer": "pubsub-go-drift", "messages": msgs, "seconds": last - t0,
                      "cpu_seconds": ru.ru_utime + ru.ru_stime, "max_rss_mb": ru.ru_maxrss / 1024,
                      "samples": samples}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
