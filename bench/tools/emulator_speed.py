"""The embedded emulator beside Google's official one, in one run: how many
1 KB messages per second go through each, for the project's own clients
and for Google's Python client.

    python bench/tools/emulator_speed.py [--messages 300000] [--official-messages 20000] [--rounds 2]

Per emulator it reports:
- pubsub-go Publisher -> Subscriber (StreamingPull): a thread publishes
  while the subscriber reads and acks; msg/s from the first publish to the
  last message read (end to end).
- Google's client, unary Pull of 1,000 + Acknowledge, on a backlog.
- Google's client, StreamingPull (`subscribe`, acking in the callback), on
  a backlog.
and the embedded/official ratios (the issue asks >= 10x for the project's
clients, >= 1x for Google's). Google's emulator gets fewer messages (it is
slow); rates, not totals, are compared.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

SIZE = 1000
PROJECT = "pubsub-go-bench"


def names(host: str) -> tuple[str, str]:
    from pubsub_go.client import admin

    suffix = uuid.uuid4().hex[:10]
    topic, sub = f"projects/{PROJECT}/topics/t-{suffix}", f"projects/{PROJECT}/subscriptions/s-{suffix}"
    admin("create_topic", emulator_host=host, topic=topic)
    admin("create_subscription", emulator_host=host, topic=topic, subscription=sub, ack_deadline_seconds=60)
    return topic, sub


def batch(lo: int, n: int) -> pa.RecordBatch:
    return pa.record_batch({"payload": pa.array([(b"%08d" % i).ljust(SIZE, b".") for i in range(lo, lo + n)],
                                                pa.binary())})


def publish_all(host: str, topic: str, n: int) -> None:
    from pubsub_go.client import Publisher

    with Publisher(topic=topic, emulator_host=host) as pub:
        for lo in range(0, n, 1000):
            pub.publish(batch(lo, min(1000, n - lo)))
        res = pub.flush(timeout_ms=600_000)
    if res["published"] != n:
        raise RuntimeError(f"published {res['published']} of {n}: {res}")


def ours(host: str, n: int, timeout: float) -> float:
    """Publisher in a thread while the Subscriber reads: end-to-end msg/s."""
    from pubsub_go.client import Subscriber

    topic, sub = names(host)
    with Subscriber(subscription=sub, emulator_host=host) as s:
        t0 = time.monotonic()
        th = threading.Thread(target=publish_all, args=(host, topic, n), daemon=True)
        th.start()
        rows, deadline = 0, t0 + timeout
        while rows < n and time.monotonic() < deadline:
            b, acks = s.next_batch(max_rows=10_000, wait_ms=200)
            if b.num_rows:
                rows += b.num_rows
                s.ack(acks)
        took = time.monotonic() - t0
        th.join(timeout=60)
    if rows < n:
        print(f"    (read {rows} of {n} within {timeout:.0f} s)", flush=True)
    return rows / took


def google_pull(google, host: str, n: int, timeout: float) -> float:
    topic, sub = names(host)
    publish_all(host, topic, n)
    got, t0 = 0, time.monotonic()
    while got < n and time.monotonic() - t0 < timeout:
        resp = google.subscriber.pull(request={"subscription": sub, "max_messages": 1000}, timeout=30)
        ids = [m.ack_id for m in resp.received_messages]
        if ids:
            google.subscriber.acknowledge(request={"subscription": sub, "ack_ids": ids})
        got += len(ids)
    return got / (time.monotonic() - t0)


def google_streaming(google, host: str, n: int, timeout: float) -> float:
    from google.cloud import pubsub_v1

    topic, sub = names(host)
    publish_all(host, topic, n)
    count = [0]
    done = threading.Event()
    lock = threading.Lock()

    def cb(msg) -> None:
        msg.ack()
        with lock:
            count[0] += 1
            if count[0] >= n:
                done.set()

    t0 = time.monotonic()
    fut = google.subscriber.subscribe(sub, cb, flow_control=pubsub_v1.types.FlowControl(max_messages=5000))
    done.wait(timeout)
    took = time.monotonic() - t0
    fut.cancel()
    try:
        fut.result(timeout=30)
    except Exception:  # noqa: BLE001 - cancelled on purpose
        pass
    return count[0] / took


def measure(label: str, host: str, n_ours: int, n_google: int, timeout: float, rounds: int) -> dict[str, float]:
    """Each case `rounds` times; the best round counts (the machine is shared:
    the best is the least disturbed), all are printed."""
    from google_peer import GoogleClients

    google = GoogleClients(host)
    out = {}
    for name, fn, args in (("pubsub-go Publisher->Subscriber", ours, (host, n_ours, timeout)),
                           ("google-cloud-pubsub Pull", google_pull, (google, host, n_google, timeout)),
                           ("google-cloud-pubsub StreamingPull", google_streaming, (google, host, n_google, timeout))):
        rates = [fn(*args) for _ in range(rounds)]
        out[name] = max(rates)
        print(f"  {label:9} {name:36} {max(rates):>10,.0f} msg/s  (rounds: {', '.join(f'{r:,.0f}' for r in rates)})",
              flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=300_000, help="messages per case on the embedded emulator")
    ap.add_argument("--official-messages", type=int, default=20_000, help="messages per case on Google's emulator")
    ap.add_argument("--google-messages", type=int, default=50_000,
                    help="messages per Google-client case on the embedded emulator")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per case")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per case; the best counts")
    args = ap.parse_args()

    from emulators import OfficialEmulator
    from pubsub_go import Emulator

    print(f"1 KB messages; embedded: {args.messages:,} (Google's client {args.google_messages:,}), "
          f"official: {args.official_messages:,}", flush=True)
    with Emulator() as emu:
        embedded = measure("embedded", emu.host_port, args.messages, args.google_messages, args.timeout, args.rounds)
    official_emu = OfficialEmulator()
    try:
        official = measure("official", official_emu.host_port, args.official_messages, args.official_messages,
                           args.timeout, args.rounds)
    finally:
        official_emu.stop()
    print("ratio embedded/official (goal: >= 10x for pubsub-go, >= 1x for Google's client):")
    for k in embedded:
        print(f"  {k:36} {embedded[k] / max(official[k], 1e-9):8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
