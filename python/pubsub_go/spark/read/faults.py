"""Fault injection for tests: makes named calls of the commit protocol fail
as a network outage would (UNAVAILABLE), so tests can prove that a failed
call loses nothing and duplicates nothing. Off unless the environment
variable PUBSUB_GO_FAULTS is set (inherited by Spark's Python workers):
a comma-separated list of point=count, e.g. "post_record_modack=1",
failing the first `count` calls at that point in each process.

Points: post_record_modack / post_record_ack (a task handing over the
leases of its recorded batch), commit_ack (the driver acking a committed
batch).
"""

from __future__ import annotations

import os
import threading

from ... import contract
from ...errors import UnavailableError

ENV = "PUBSUB_GO_FAULTS"
POINTS = ("post_record_modack", "post_record_ack", "commit_ack")

_lock = threading.Lock()
_left: dict[str, int] | None = None


def _parse(spec: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in spec.split(","))):
        point, _, count = item.partition("=")
        if point not in POINTS:
            raise ValueError(f"{ENV}: unknown fault point {point!r}; expected one of {', '.join(POINTS)}")
        out[point] = int(count or "1")
    return out


def inject(point: str) -> None:
    """Raises UnavailableError if a fault is armed at point."""
    global _left
    spec = os.environ.get(ENV)
    if not spec:
        return
    with _lock:
        if _left is None:
            _left = _parse(spec)
        if _left.get(point, 0) <= 0:
            return
        _left[point] -= 1
    raise UnavailableError(contract.error_kinds()["unavailable"], f"injected fault at {point} ({ENV})")
