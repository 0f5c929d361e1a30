"""A running query's figures, from Spark's own progress reports.

    from pubsub_go.progress import figures, plot
    rows = figures(query)           # one dict per micro-batch
    plot(query, "progress.png")     # rows/s, oldest unacked age, pending acks

The source reports through `sources[].latestOffset` on PySpark 4.2+ and
`sources[].endOffset.progress` on 4.0/4.1 (the Python data source API has
no metrics hook; docs/source.md, "Progress and counters"), so these
helpers read whichever holds it from `query.recentProgress`.
"""

from __future__ import annotations

import json
from typing import Any

# The figures taken from the source's report, by name in the output.
SOURCE_FIGURES = ("rows", "taken", "pendingAcks", "acked", "oldestUnackedAgeMs", "backlogMessages", "late",
                  "deadLettered", "duplicates", "buffered", "flowFullMs", "streamsDownMs", "blockedMs")


def figures(query_or_progress: Any) -> list[dict[str, Any]]:
    """One dict per progress report of a pubsub-go query: batchId,
    timestamp, numInputRows, processedRowsPerSecond, triggerMs and the
    source's figures (SOURCE_FIGURES; a figure the service cannot give is
    None, never 0)."""
    progress = getattr(query_or_progress, "recentProgress", query_or_progress)
    out = []
    for p in progress:
        off = next((r for r in map(_report, p["sources"]) if r is not None), None)
        if off is None:
            continue
        row = {"batchId": p["batchId"], "timestamp": p["timestamp"], "numInputRows": p["numInputRows"],
               "processedRowsPerSecond": p["processedRowsPerSecond"],
               "triggerMs": (p["durationMs"] or {}).get("triggerExecution")}
        row.update({k: off.get(k) for k in SOURCE_FIGURES})
        out.append(row)
    return out


def _report(source: Any) -> dict[str, Any] | None:
    """The source's figures: its latestOffset (PySpark 4.2+), or the
    `progress` its endOffset carries (4.0/4.1); None for another source."""
    for field, inner in (("latestOffset", None), ("endOffset", "progress")):
        off = source.get(field) if hasattr(source, "get") else source[field]
        try:
            off = json.loads(off) if isinstance(off, str) else off
        except ValueError:
            continue
        if isinstance(off, dict) and inner is not None:
            off = off.get(inner)
        if isinstance(off, dict) and "pendingAcks" in off:
            return off
    return None


def plot(query_or_progress: Any, path: str) -> str:
    """Writes a PNG of rows/s, the oldest unacked message's age and pending
    acks per micro-batch; returns path. Needs matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("pubsub_go.progress.plot needs matplotlib: pip install matplotlib") from None
    rows = figures(query_or_progress)
    if not rows:
        raise ValueError("no progress of a pubsub-go source yet: let the query run a micro-batch first")
    x = [r["batchId"] for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    series = [("processedRowsPerSecond", "rows/s"), ("oldestUnackedAgeMs", "oldest unacked (ms)"),
              ("pendingAcks", "pending acks")]
    for ax, (key, label) in zip(axes, series, strict=True):
        ax.plot(x, [r[key] if r[key] is not None else float("nan") for r in rows], marker=".")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].set_title("pubsub-go query progress (backlog: not reported by Pub/Sub's API)")
    axes[-1].set_xlabel("micro-batch")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
