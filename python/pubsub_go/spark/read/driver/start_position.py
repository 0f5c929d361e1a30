"""Where a new query starts reading: `startingTimestamp` or
`startingSnapshot`, applied with Pub/Sub Seek when the query starts for
the first time (Spark asks the source for its initial offset only when the
checkpoint has no offsets), never on a restart from the checkpoint.

Seek moves the subscription's cursor for every consumer of it, not just
this query (docs/source.md)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from ....client import _full_name
from ...connection_options import ConnectionOptions
from ...option_table import text
from ...optparse import OptionError

log = logging.getLogger("pubsub_go.start_position")

_UNITS_MS = {"ms": 1, "millisecond": 1, "s": 1000, "sec": 1000, "second": 1000, "m": 60_000, "min": 60_000,
             "minute": 60_000, "h": 3_600_000, "hour": 3_600_000, "d": 86_400_000, "day": 86_400_000}
_RELATIVE = re.compile(r"^-\s*(\d+)\s*([a-z]+?)s?$")
_FORMS = ("epoch milliseconds (e.g. 1735689600000), an ISO-8601 time (e.g. 2025-01-01T00:00:00Z; "
          "no zone means UTC), or a time before the query's first start (e.g. -2 hours, -30m, -1 day)")


@dataclass(frozen=True)
class StartPosition:
    """Either a point in time (absolute epoch ms, or relative: ms before the
    first start) or a snapshot; neither: the subscription's own cursor."""

    timestamp_ms: int | None = None
    relative_ms: int | None = None
    snapshot: str | None = None

    @property
    def given(self) -> bool:
        return self.timestamp_ms is not None or self.relative_ms is not None or self.snapshot is not None

    @staticmethod
    def parse(opts: Mapping[str, str], project: str) -> StartPosition:
        ts = (text(opts, "startingTimestamp") or "")
        snap = (text(opts, "startingSnapshot") or "")
        if ts and snap:
            raise OptionError("options startingTimestamp and startingSnapshot are exclusive: set one")
        if snap:
            try:
                return StartPosition(snapshot=_full_name("snapshots", project, snap))
            except ValueError as e:
                raise OptionError(f"option startingSnapshot: {e}") from None
        if not ts:
            return StartPosition()
        if re.fullmatch(r"\d+", ts):
            return StartPosition(timestamp_ms=int(ts))
        m = _RELATIVE.match(ts.lower())
        if m:
            unit = _UNITS_MS.get(m.group(2))
            if unit is None:
                raise OptionError(f"option startingTimestamp={ts!r}: unknown unit {m.group(2)!r}; expected {_FORMS}")
            return StartPosition(relative_ms=int(m.group(1)) * unit)
        try:
            dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        except ValueError:
            raise OptionError(f"option startingTimestamp={ts!r} is not understood; expected {_FORMS}") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return StartPosition(timestamp_ms=int(dt.timestamp() * 1000))


def seek_on_first_start(subscription: str, start: StartPosition, conn: ConnectionOptions) -> None:
    """Seeks the subscription; called from initialOffset() only, which Spark
    calls when the query has no committed offsets."""
    from ....client import admin

    if not start.given:
        return
    if start.snapshot is not None:
        admin("seek", subscription=subscription, snapshot=start.snapshot, **conn.client_kwargs())
        log.warning("seeked subscription %s to snapshot %s (first start of the query)", subscription, start.snapshot)
        return
    if start.relative_ms is not None:
        micros = time.time_ns() // 1000 - start.relative_ms * 1000
    else:
        micros = int(start.timestamp_ms) * 1000
    admin("seek", subscription=subscription, time_unix_micros=max(micros, 1), **conn.client_kwargs())
    log.warning("seeked subscription %s to %s (first start of the query)", subscription,
                datetime.fromtimestamp(micros / 1e6, timezone.utc).isoformat())
