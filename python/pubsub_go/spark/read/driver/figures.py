"""The source's figures for Spark's progress report: each finished batch's
summary (also the evidence latestOffset uses about the backlog) and the
query's counters. Not thread-safe: the driver's callers hold its lock."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .logged_batches import EntryInfo
from .offsets import BatchOffset

# Pub/Sub's API reports no backlog (Cloud Monitoring's
# num_undelivered_messages does, minutes late); the report says so rather
# than print 0.
BACKLOG_NOTE = ("not reported: Pub/Sub's API has no backlog figure; see Cloud Monitoring's "
                "subscription/num_undelivered_messages and oldest_unacked_message_age")

# Per-task counters summed into a batch's and the query's figures.
SUMMED = ("pulled", "taken", "rows", "late", "dead_lettered", "duplicates", "nacked", "extended",
          "redeliveries", "decode_errors", "bytes_pulled", "streams_restarted", "flow_full_ms", "streams_down_ms",
          "event_time_errors")
# Their names in the progress report, where they differ (camelCase, as Spark's).
_METRIC_NAMES = {"dead_lettered": "deadLettered", "decode_errors": "decodeErrors", "bytes_pulled": "bytesPulled",
                 "streams_restarted": "streamsRestarted", "extended": "leaseExtensions",
                 "flow_full_ms": "flowFullMs", "streams_down_ms": "streamsDownMs",
                 "event_time_errors": "eventTimeErrors"}

# How many batches before the latest keep their summary (only the latest are ever asked for).
_KEPT = 8


@dataclass(frozen=True)
class BatchSummary:
    """What a finished batch tells about the backlog: its rows, and whether
    every task ended on positive evidence that the backlog was empty."""

    rows: int
    drained: bool
    stats: dict[str, int]  # the tasks' counters, summed; blocked_ms their longest (docs/source.md, "Counters")


class Figures:
    def __init__(self) -> None:
        self.metrics: dict[str, int] = {"acked": 0, "leaseExtensions": 0, "pendingAcks": 0, "ackFailures": 0,
                                        "buffered": 0, "blockedMs": 0}
        for k in SUMMED:
            self.metrics[_METRIC_NAMES.get(k, k)] = 0
        self.last_batch: dict[str, int] = {}
        self._summaries: dict[tuple[str, int], BatchSummary] = {}

    def count(self, name: str, n: int) -> None:
        self.metrics[name] = self.metrics.get(name, 0) + n

    def known_summary(self, gen: str, batch: int) -> BatchSummary | None:
        return self._summaries.get((gen, batch))

    def summarize(self, gen: str, batch: int, entries: list[EntryInfo]) -> BatchSummary | None:
        """The summary of a batch whose tasks all published entries (None if
        none did); kept after the committer removes the entries. Its counters
        are added to the query's once, when the batch is first seen finished
        (not at commit, which runs after the next progress report)."""
        known = self.known_summary(gen, batch)
        if known is not None or not entries:
            return known
        summed = {k: sum(int(e.stats.get(k, 0)) for e in entries) for k in SUMMED}
        summed["buffered"] = sum(int(e.stats.get("buffered", 0)) for e in entries)
        # A current value, not a share: summed, stalls that ran side by side
        # would add up; the longest is how long the batch's most held-back
        # subscriber had been unable to receive when its task ended.
        summed["blocked_ms"] = max(int(e.stats.get("blocked_ms", 0)) for e in entries)
        # Also current: the streams the batch's subscribers ran when their tasks ended.
        summed["streams"] = sum(int(e.stats.get("streams", 0)) for e in entries)
        out = BatchSummary(rows=sum(e.rows for e in entries),
                           drained=all(e.stats.get("drained", False) for e in entries), stats=summed)
        self._summaries[(gen, batch)] = out
        for k in SUMMED:
            self.count(_METRIC_NAMES.get(k, k), summed[k])
        self.metrics["buffered"] = summed["buffered"]
        self.metrics["blockedMs"] = summed["blocked_ms"]
        self.last_batch = {"batch": batch, **summed}
        for old in [k for k in self._summaries if k[0] != gen or k[1] < batch - _KEPT]:
            del self._summaries[old]
        return out

    def report(self, latest: BatchOffset | None, pending: list[EntryInfo], ack_on_commit: bool) -> dict[str, Any]:
        """reportLatestOffset's object: the latest offset, the counters, and
        the pending (recorded, not yet acked) entries' figures."""
        self.metrics["pendingAcks"] = sum(e.rows for e in pending) if ack_on_commit else 0  # a row per ack id
        out: dict[str, Any] = latest.to_json() if latest is not None else {}
        out.update(self.metrics)
        out["oldestUnackedAgeMs"] = _oldest_age_ms(pending)
        out["backlogMessages"] = None
        out["backlogNote"] = BACKLOG_NOTE
        out["lastBatch"] = dict(self.last_batch)
        return out


def _oldest_age_ms(entries: list[EntryInfo]) -> int | None:
    """Age of the oldest message in entries (handed to Spark, not acked
    yet), by publish time; None if there is none."""
    oldest = [o for e in entries if e.rows and (o := int(e.stats.get("oldest_publish_us", 0))) > 0]
    if not oldest:
        return None
    return max(0, (time.time_ns() // 1000 - min(oldest)) // 1000)
