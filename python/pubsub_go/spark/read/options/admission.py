"""Admission control: how much one micro-batch takes, and how long it may
wait for enough (docs/source.md, "Admission control").

- maxRecordsPerTrigger and maxBytesPerTrigger: caps per micro-batch. Both
  set, the stricter wins: every task stops at its share of either, so the
  batch stays within both (Spark's composite read limit; a Python source
  gets one ReadLimit from Spark at most, so the source applies both itself
  on every PySpark).
- minRecordsPerTrigger (or its twin in bytes, minBytesPerTrigger) with
  maxTriggerDelay, as Kafka's source defines them:
  a micro-batch waits until it has that many rows, but no longer than
  maxTriggerDelay. Kafka skips the trigger while too little is available
  and counts the delay from the last batch it ran; a Pub/Sub source cannot
  count a backlog without pulling it, so here the batch's tasks keep
  pulling until each has its share of the rows, for at most maxTriggerDelay
  from the batch's planning (right after the previous batch ended, under
  the default trigger). Not under AvailableNow or drainBacklog, which read
  what is there and stop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...option_table import SOURCE, table
from ...optparse import OptionError

_OPTIONS = table(SOURCE)
# Kafka's default for maxTriggerDelay.
DEFAULT_MAX_TRIGGER_DELAY_MS = _OPTIONS.default("maxTriggerDelay")


@dataclass(frozen=True)
class TriggerLimits:
    """None: no limit (no minimum), as the option table's default says and
    as the offsets carry it; the tasks never see a 0 for "none" either."""

    max_rows: int | None = None  # maxRecordsPerTrigger
    max_bytes: int | None = None  # maxBytesPerTrigger
    min_rows: int | None = None  # minRecordsPerTrigger
    min_bytes: int | None = None  # minBytesPerTrigger, its twin in bytes
    max_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS  # maxTriggerDelay

    @staticmethod
    def parse(opts: Mapping[str, str], num_partitions: int, rows_per_partition: int) -> TriggerLimits:
        lim = TriggerLimits(
            max_rows=_OPTIONS.value(opts, "maxRecordsPerTrigger"),
            max_bytes=_OPTIONS.value(opts, "maxBytesPerTrigger"),
            min_rows=_OPTIONS.value(opts, "minRecordsPerTrigger"),
            min_bytes=_OPTIONS.value(opts, "minBytesPerTrigger"),
            max_delay_ms=_OPTIONS.value(opts, "maxTriggerDelay"),
        )
        if "maxtriggerdelay" in opts and lim.min_rows is None and lim.min_bytes is None:
            raise OptionError("option maxTriggerDelay only applies with minRecordsPerTrigger (alias "
                              "minOffsetsPerTrigger) or minBytesPerTrigger: how long a micro-batch may wait "
                              "for that much data")
        if lim.min_bytes is not None and lim.max_bytes is not None and lim.min_bytes > lim.max_bytes:
            raise OptionError(f"option minBytesPerTrigger={lim.min_bytes} exceeds maxBytesPerTrigger="
                              f"{lim.max_bytes}; expected at most that")
        if lim.min_rows is not None and lim.max_rows is not None and lim.min_rows > lim.max_rows:
            raise OptionError(f"option minRecordsPerTrigger={lim.min_rows} exceeds maxRecordsPerTrigger="
                              f"{lim.max_rows}; expected at most that")
        if (lim.min_rows is not None and lim.max_rows is None
                and share(lim.min_rows, num_partitions, 0) > rows_per_partition):
            raise OptionError(f"option minRecordsPerTrigger={lim.min_rows} over {num_partitions} tasks exceeds "
                              f"maxRecordsPerPartition={rows_per_partition} per task; raise that or set "
                              "maxRecordsPerTrigger")
        return lim


def share(total: int, n: int, i: int) -> int:
    """Task i's share of a per-batch figure split over n tasks."""
    return total // n + (1 if i < total % n else 0)
