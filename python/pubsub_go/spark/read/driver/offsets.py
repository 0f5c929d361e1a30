"""The source's offsets: synthetic, since Pub/Sub has none to replay.

An offset names a micro-batch of a query generation; what the batch holds
is whatever its tasks pulled, recorded in the batch log (batchlog/), so
re-running a batch replays the log instead of pulling anew. Spark stores
offsets as JSON in the checkpoint: the keys below must stay as they are, so
that a query restarts from a checkpoint written by any version.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

# The integer fields checkpointed only when set: (attribute, JSON key).
_OPTIONAL_INT_KEYS = (("max_rows", "maxRows"), ("max_bytes", "maxBytes"), ("cutoff_us", "cutoffUs"),
                      ("min_rows", "minRows"), ("min_bytes", "minBytes"), ("wait_until_ms", "waitUntilMs"))


@dataclass(frozen=True)
class BatchOffset:
    """The end of micro-batch `batch` (0: the start, before any batch)."""

    gen: str  # the query generation, minted on the query's first start
    batch: int
    # The run of the query (driver process) that planned the batch: the
    # end-of-backlog decision only trusts batches of its own run. None for
    # the initial offset.
    run: str | None = None
    max_rows: int | None = None  # admission control: maxRecordsPerTrigger
    max_bytes: int | None = None  # admission control: maxBytesPerTrigger
    cutoff_us: int | None = None  # AvailableNow: only messages published at or before this
    min_rows: int | None = None  # admission control: minRecordsPerTrigger
    min_bytes: int | None = None  # ... minBytesPerTrigger
    wait_until_ms: int | None = None  # ... waited for until this time (epoch ms), maxTriggerDelay

    @staticmethod
    def initial() -> BatchOffset:
        return BatchOffset(gen=uuid.uuid4().hex[:16], batch=0)

    def to_json(self) -> dict[str, Any]:
        """The JSON object Spark checkpoints; keys that are not set are left out."""
        out: dict[str, Any] = {"gen": self.gen, "batch": self.batch}
        if self.run is not None:
            out["run"] = self.run
        for attr, key in _OPTIONAL_INT_KEYS:
            if (value := getattr(self, attr)) is not None:
                out[key] = value
        return out

    @staticmethod
    def from_json(obj: dict[str, Any]) -> BatchOffset:
        if "frontEnd" in obj:  # only the JVM front end's offsets carry it (jvm/.../source/PubsubGoOffset.java)
            raise ValueError(
                f"pubsub-go: this checkpoint was written by pubsub-go's {obj['frontEnd']!s} front end (offset "
                f"{obj}), and the Python front end cannot continue it: put the jar back on the session "
                "(pubsub_go.configure_spark, docs/jvm.md \"Which front end runs\"), or start the query on a new "
                "checkpointLocation")
        ints = {attr: int(obj[key]) for attr, key in _OPTIONAL_INT_KEYS if obj.get(key) is not None}
        return BatchOffset(gen=str(obj["gen"]), batch=int(obj["batch"]), run=obj.get("run"), **ints)
