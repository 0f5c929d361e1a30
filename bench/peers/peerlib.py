"""What every Python peer measures and prints: its own CPU seconds and one
JSON result line (gopublish/goreceive's fields plus max_rss_mb)."""

from __future__ import annotations

import json
import resource
from typing import Any


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def report(peer: str, messages: int, nbytes: int, seconds: float, cpu: float, **extra: Any) -> None:
    print(json.dumps({"peer": peer, "messages": messages, "bytes": nbytes, "seconds": seconds,
                      "msgs_per_sec": messages / seconds, "cpu_seconds": cpu, **extra,
                      "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
