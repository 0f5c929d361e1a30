"""A planned task: one virtual partition of a micro-batch."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition


@dataclass(frozen=True)
class PubSubPartition:
    """What a task reads; picklable, planned on the driver (stream.py)."""

    gen: str
    batch: int
    index: int
    max_rows: int
    max_bytes: int  # 0: no limit
    cutoff_us: int  # AvailableNow: hand out only messages published at or before this; 0: none


class PubSubInputPartition(InputPartition):
    def __init__(self, spec: PubSubPartition) -> None:
        super().__init__(spec.index)
        self.spec = spec
