"""`bench-plain-pubsub`: the Pub/Sub streaming source a PySpark user writes
today with google-cloud-pubsub and the Python Data Source API. Each task
pulls with the synchronous Pull RPC (1000 messages per call), yields one
tuple per message and acks each pull's messages after yielding them (at
most once: simple, and the cheapest form; the benchmark is generous to it).
The client is cached per Python worker.

Options: subscription (projects/P/subscriptions/S), emulatorHost,
numPartitions (2), maxRowsPerPartition (100000) and maxBatchDurationMs
(2000) per micro-batch, maxMessages per Pull (1000).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from google.api_core.exceptions import DeadlineExceeded
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

RAW_DDL = ("message_id STRING, publish_time TIMESTAMP, attributes MAP<STRING, STRING>, "
           "payload BINARY, ordering_key STRING, delivery_attempt INT")

_clients: dict[str, object] = {}


def _client(emulator_host: str):
    if emulator_host not in _clients:
        if emulator_host:
            os.environ["PUBSUB_EMULATOR_HOST"] = emulator_host
        from google.cloud import pubsub_v1

        _clients[emulator_host] = pubsub_v1.SubscriberClient()
    return _clients[emulator_host]


class _Part(InputPartition):
    def __init__(self, index: int) -> None:
        super().__init__(index)


class PlainPubSubSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench-plain-pubsub"

    def schema(self) -> str:
        return RAW_DDL

    def streamReader(self, schema) -> PlainPubSubReader:
        return PlainPubSubReader(dict(self.options))


class PlainPubSubReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}  # Spark may lower-case option keys
        self.subscription = options["subscription"]
        self.emulator_host = options.get("emulatorhost", "")
        self.parts = int(options.get("numpartitions", 2))
        self.max_rows = int(options.get("maxrowsperpartition", 100_000))
        self.max_ms = int(options.get("maxbatchdurationms", 2000))
        self.max_messages = int(options.get("maxmessages", 1000))

    def initialOffset(self) -> dict:
        return {"batch": 0}

    def latestOffset(self, start: dict, limit) -> dict:
        return {"batch": start["batch"] + 1}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [_Part(i) for i in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        client = _client(self.emulator_host)
        deadline = time.monotonic() + self.max_ms / 1000
        rows = 0
        while rows < self.max_rows and time.monotonic() < deadline:
            try:
                # A Pull with nothing to deliver waits (Google's emulator, until its
                # deadline): bounded by the task's time budget, so an empty
                # subscription ends the task on time instead of 30 s later.
                resp = client.pull(request={"subscription": self.subscription,
                                            "max_messages": min(self.max_messages, self.max_rows - rows)},
                                   timeout=max(0.05, deadline - time.monotonic()))
            except DeadlineExceeded:
                break
            ack_ids = []
            for rm in resp.received_messages:
                m = rm.message
                yield (m.message_id, m.publish_time, dict(m.attributes), m.data, m.ordering_key,
                       rm.delivery_attempt)
                ack_ids.append(rm.ack_id)
            if ack_ids:
                client.acknowledge(request={"subscription": self.subscription, "ack_ids": ack_ids})
            rows += len(ack_ids)

    def commit(self, end: dict) -> None:
        pass
