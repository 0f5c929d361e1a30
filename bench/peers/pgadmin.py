"""Creates a topic and subscriptions through pubsub_go's admin helper;
prints {"created": n}."""

from __future__ import annotations

import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulator-host", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--subscriptions", default="")
    ap.add_argument("--ack-deadline", type=int, default=60)
    a = ap.parse_args()

    from pubsub_go.client import admin

    admin("create_topic", emulator_host=a.emulator_host, topic=a.topic)
    subs = [s for s in a.subscriptions.split(",") if s]
    for s in subs:
        admin("create_subscription", emulator_host=a.emulator_host, topic=a.topic, subscription=s,
              ack_deadline_seconds=a.ack_deadline)
    print(json.dumps({"created": len(subs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
