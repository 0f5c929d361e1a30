"""PNG plots: data-plane throughput and per-core throughput against
payload size, and RSS over the drift run."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .stats import Spread  # noqa: E402

LABELS = {"pubsub-go": "pubsub-go (Go data plane -> pyarrow)", "google-python": "Google Python client",
          "google-go": "Google Go client"}


def _series(rows: list[dict], client: str, key: str) -> tuple[list[int], list[Spread]]:
    sizes = sorted({r["payload"] for r in rows})
    xs, ss = [], []
    for size in sizes:
        s = Spread.of([r[key] for r in rows if r["client"] == client and r["payload"] == size and r.get(key)])
        if s:
            xs.append(size)
            ss.append(s)
    return xs, ss


def _panel(ax, rows: list[dict], key: str, ylabel: str) -> None:
    for client, label in LABELS.items():
        xs, ss = _series(rows, client, key)
        if not xs:
            continue
        med = [s.median for s in ss]
        err = [[s.median - s.lo for s in ss], [s.hi - s.median for s in ss]]
        ax.errorbar(xs, med, yerr=err, marker="o", capsize=3, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("payload bytes per message")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)


def dataplane(rows: list[dict], out_dir: Path) -> list[str]:
    if not rows:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    _panel(axes[0], rows, "msgs_per_sec", "messages / s")
    _panel(axes[1], rows, "mb_per_sec", "payload MB / s")
    axes[0].legend(fontsize=8)
    fig.suptitle("Data plane, no Spark: consume + ack from the load server (median, bars: min-max)")
    fig.tight_layout()
    a = out_dir / "dataplane_throughput.png"
    fig.savefig(a, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    _panel(ax, rows, "per_core", "messages / s per core of the consumer process")
    ax.legend(fontsize=8)
    ax.set_title("Data plane: throughput per CPU core (median, bars: min-max)")
    fig.tight_layout()
    b = out_dir / "dataplane_per_core.png"
    fig.savefig(b, dpi=110)
    plt.close(fig)
    return [a.name, b.name]


def drift(d: dict, out_dir: Path) -> list[str]:
    samples = d.get("samples") or []
    if not samples:
        return []
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot([s[0] / 60 for s in samples], [s[1] for s in samples], marker=".")
    ax.set_xlabel("minutes")
    ax.set_ylabel("RSS MB")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"pubsub_go pull loop RSS, 1 KB at {d['messages'] / max(d['seconds'], 1):,.0f} msg/s")
    fig.tight_layout()
    p = out_dir / "memory_drift.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return [p.name]
