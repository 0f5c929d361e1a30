"""Progress lines on stderr, stamped with the time since the run began."""

from __future__ import annotations

import sys
import time

_T0 = time.monotonic()


def elapsed() -> float:
    return time.monotonic() - _T0


def say(msg: str) -> None:
    m, s = divmod(int(elapsed()), 60)
    print(f"[{m:02d}:{s:02d}] {msg}", file=sys.stderr, flush=True)
