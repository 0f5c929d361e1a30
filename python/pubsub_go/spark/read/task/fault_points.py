"""Named points of the commit protocol where a test makes a call fail as a
network outage would, to prove that a failed call loses nothing and
duplicates nothing. at() does nothing unless a hook is installed, which only
tests do (tests/faults/sitecustomize.py, in every Python process of their
Spark job).

Points: post_record_modack / post_record_ack (a task handing over the
leases of its recorded batch), commit_ack (the driver acking a committed
batch)."""

from __future__ import annotations

from collections.abc import Callable

POST_RECORD_MODACK = "post_record_modack"
POST_RECORD_ACK = "post_record_ack"
COMMIT_ACK = "commit_ack"
POINTS = (POST_RECORD_MODACK, POST_RECORD_ACK, COMMIT_ACK)

_hook: Callable[[str], None] | None = None


def install(hook: Callable[[str], None] | None) -> None:
    """hook(point) runs at every point reached (and may raise); None: none."""
    global _hook
    _hook = hook


def at(point: str) -> None:
    """Runs the installed hook, if any, at point (one of POINTS)."""
    if _hook is not None:
        _hook(point)
