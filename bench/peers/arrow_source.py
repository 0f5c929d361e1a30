"""`bench-arrow`: the Spark ceiling for a Python streaming source. Each
task yields ready-made Arrow batches of the raw Pub/Sub schema (the same
shape pubsub-go's source produces), built once per Python worker, so the
figure is what Spark's Python Data Source path itself can carry.

Options: numPartitions (2), rowsPerPartition per micro-batch (100000),
batchRows (1000), payloadBytes (1024), attributes (2), schema ("raw", or
"publish": payload only, to feed a sink).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

RAW_DDL = ("message_id STRING, publish_time TIMESTAMP, attributes MAP<STRING, STRING>, "
           "payload BINARY, ordering_key STRING, delivery_attempt INT")
PUBLISH_DDL = "payload BINARY"

_cache: dict[tuple, pa.RecordBatch] = {}


def make_batch(rows: int, payload_bytes: int, attributes: int, kind: str = "raw") -> pa.RecordBatch:
    """One batch shaped like the loadserver's messages."""
    key = (rows, payload_bytes, attributes, kind)
    if key in _cache:
        return _cache[key]
    payload = pa.array([bytes([97 + i % 26]) * payload_bytes for i in range(rows)], pa.binary())
    attrs = pa.array([[(f"attr-{k:03d}", f"value-{k:03d}") for k in range(attributes)]] * rows,
                     pa.map_(pa.string(), pa.string()))
    if kind == "publish":
        b = pa.RecordBatch.from_arrays([payload], names=["payload"])
    else:
        now = datetime.now(timezone.utc)
        b = pa.RecordBatch.from_arrays([
            pa.array([str(i) for i in range(rows)], pa.string()),
            pa.array([now] * rows, pa.timestamp("us", tz="UTC")),
            attrs,
            payload,
            pa.array([""] * rows, pa.string()),
            pa.array([1] * rows, pa.int32()),
        ], names=["message_id", "publish_time", "attributes", "payload", "ordering_key", "delivery_attempt"])
    _cache[key] = b
    return b


class _Part(InputPartition):
    def __init__(self, index: int) -> None:
        super().__init__(index)


class ArrowMemorySource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench-arrow"

    def schema(self) -> str:
        return PUBLISH_DDL if self.options.get("schema", "raw") == "publish" else RAW_DDL

    def streamReader(self, schema) -> ArrowMemoryReader:
        return ArrowMemoryReader(dict(self.options))


class ArrowMemoryReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}  # Spark may lower-case option keys
        self.parts = int(options.get("numpartitions", 2))
        self.rows = int(options.get("rowsperpartition", 100_000))
        self.batch_rows = int(options.get("batchrows", 1000))
        self.payload = int(options.get("payloadbytes", 1024))
        self.attributes = int(options.get("attributes", 2))
        self.kind = options.get("schema", "raw")

    def initialOffset(self) -> dict:
        return {"batch": 0}

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        # PySpark 4.0/4.1 pass no start (and no limit): count on from the
        # last offset returned.
        base = start["batch"] if start is not None else getattr(self, "_last", 0)
        self._last = base + 1
        return {"batch": base + 1}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [_Part(i) for i in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        full = make_batch(self.batch_rows, self.payload, self.attributes, self.kind)
        left = self.rows
        while left > 0:
            b = full if left >= len(full) else full.slice(0, left)
            left -= len(b)
            yield b

    def commit(self, end: dict) -> None:
        pass
