"""Google's own Python client (google-cloud-pubsub), pointed at an
emulator: the outside peer of the tests."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

PROJECT = "pubsub-go-test"


class GoogleClients:
    """Google's own Python client, pointed at an emulator: the outside peer."""

    def __init__(self, host_port: str) -> None:
        os.environ["PUBSUB_EMULATOR_HOST"] = host_port  # google-cloud-pubsub reads it at client creation
        from google.cloud import pubsub_v1

        self.host_port = host_port
        self.project = PROJECT
        self.publisher = pubsub_v1.PublisherClient(
            publisher_options=pubsub_v1.types.PublisherOptions(enable_message_ordering=True)
        )
        self.subscriber = pubsub_v1.SubscriberClient()

    def topic(self, ack_deadline: int = 10, ordering: bool = False, dead_letter: str | None = None,
              max_attempts: int = 5) -> tuple[str, str]:
        """Creates a fresh topic + subscription; returns their full paths."""
        suffix = uuid.uuid4().hex[:10]
        topic = f"projects/{PROJECT}/topics/t-{suffix}"
        sub = f"projects/{PROJECT}/subscriptions/s-{suffix}"
        self.publisher.create_topic(name=topic, timeout=30)
        req: dict = {"name": sub, "topic": topic, "ack_deadline_seconds": ack_deadline,
                     "enable_message_ordering": ordering}
        if dead_letter:
            req["dead_letter_policy"] = {"dead_letter_topic": dead_letter, "max_delivery_attempts": max_attempts}
        self.subscriber.create_subscription(request=req, timeout=30)
        return topic, sub

    def publish(self, topic: str, payloads: list[bytes], attributes: list[dict[str, str]] | None = None,
                ordering_keys: list[str] | None = None) -> list[str]:
        futures = []
        for i, data in enumerate(payloads):
            attrs = attributes[i] if attributes else {}
            key = ordering_keys[i] if ordering_keys else ""
            futures.append(self.publisher.publish(topic, data, ordering_key=key, **attrs))
        return [f.result(timeout=60) for f in futures]

    def pull_all(self, sub: str, max_wait: float = 5.0, ack: bool = True,
                 until: Callable[[list], bool] | None = None) -> list:
        """Synchronous Pull until a pull comes back empty after max_wait or,
        given until, as soon as until(the messages so far) holds: for a
        check that nothing later could change (every payload present, when
        copies are allowed), which then need not wait max_wait out."""
        import time

        out = []
        deadline = time.monotonic() + max_wait
        while time.monotonic() < deadline:
            resp = self.subscriber.pull(request={"subscription": sub, "max_messages": 1000},
                                        timeout=max(0.5, deadline - time.monotonic()))
            if resp.received_messages:
                out.extend(resp.received_messages)
                if ack:
                    ids = [m.ack_id for m in resp.received_messages]
                    for i in range(0, len(ids), 2500):
                        self.subscriber.acknowledge(request={"subscription": sub, "ack_ids": ids[i:i + 2500]})
                deadline = time.monotonic() + max_wait
                if until is not None and until(out):
                    break
        return out
