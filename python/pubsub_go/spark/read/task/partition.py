"""A planned task: one virtual partition of a micro-batch."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.datasource import InputPartition

from ....configs import TopicSchema


@dataclass(frozen=True)
class PubSubPartition:
    """What a task reads; picklable, planned on the driver (stream.py)."""

    gen: str
    batch: int
    index: int
    max_rows: int  # its share of maxRecordsPerTrigger, else maxRecordsPerPartition
    # None here and below: no limit (no cut-off, no minimum), as in the
    # offsets; subscriber_config.py maps None to the library's 0.
    max_bytes: int | None = None  # its share of maxBytesPerTrigger
    cutoff_us: int | None = None  # AvailableNow: hand out only messages published at or before this
    # minRecordsPerTrigger/minBytesPerTrigger: the task keeps pulling until
    # it has min_rows and min_bytes or the clock reaches wait_until_ms (epoch
    # ms, maxTriggerDelay).
    min_rows: int | None = None
    min_bytes: int | None = None
    wait_until_ms: int | None = None
    # schemaFrom=topic: the topic's schema as the driver read it at query
    # start (the tasks' reader objects never see the driver's state).
    topic_schema: TopicSchema | None = field(default=None, compare=False)


class PubSubInputPartition(InputPartition):
    def __init__(self, spec: PubSubPartition) -> None:
        super().__init__(spec.index)
        self.spec = spec
