"""Latency of the pubsub-go source (issue 12): publish time to arrival in a
`foreachBatch` sink, at fixed publish rates.

The load server runs with `--rate R`: new 1 KB messages become available at
R per second, each stamped with `publish_time` = the moment it became
available (a reader that falls behind sees the backlog's age, as with the
real service). The schedule starts when the query's first stream pulls. The query uses
default options (only `subscriptionId` and `emulatorHost`) and
`trigger(processingTime="0 seconds")`. The foreachBatch function
materialises the batch's `publish_time` column (`toArrow()`, which runs the
micro-batch's tasks, so the rows are pulled then) and takes the wall clock
when it has them: that is the rows' arrival. Latency per row = arrival -
publish_time. Rows published in the first `--warmup` seconds after the
first row are left out; the run measures rows published in the following
`--window` seconds.

Per batch it also records when the function was entered (so the time before
it, trigger planning and the driver's offsets, shows apart from the tasks)
and how long the tasks took.

    python bench/tools/latency.py [--rates 10000,100000] [--reps 3] [--warmup 10] [--window 20]
        [--lib PATH] [--option key=value ...] [--plot bench/results/latency.png] [--json out.json]

Prints one JSON line per run and a Markdown table (median [min-max] over runs).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from harness.procs import Build, LoadServer, create  # noqa: E402
from harness.sparkrun import session  # noqa: E402

PAYLOAD = 1024


class Collector:
    """The foreachBatch function: per batch, its latencies (ms) and timings."""

    def __init__(self, warmup: float, window: float) -> None:
        self.warmup, self.window = warmup, window
        self.t_from = self.t_to = float("inf")  # publish times (s) counted, from the first row's
        self.lat_ms: list[np.ndarray] = []
        self.batches: list[dict] = []
        self.last_publish = 0.0
        self.lock = threading.Lock()

    def __call__(self, df, batch_id: int) -> None:
        entered = time.time()
        tbl = df.selectExpr("unix_micros(publish_time) AS pt").toArrow()
        arrived = time.time()
        pt = tbl.column("pt").to_numpy(zero_copy_only=False).astype(np.float64) / 1e6 if tbl.num_rows else None
        b = {"batch": batch_id, "rows": tbl.num_rows, "entered": entered, "read_ms": (arrived - entered) * 1000}
        if pt is not None:
            if self.t_from == float("inf"):  # the schedule started at the first pull
                self.t_from = float(pt.min()) + self.warmup
                self.t_to = self.t_from + self.window
            keep = pt[(pt >= self.t_from) & (pt < self.t_to)]
            b.update(oldest_ms=(arrived - pt.min()) * 1000, newest_ms=(arrived - pt.max()) * 1000,
                     counted=len(keep))
            with self.lock:
                self.last_publish = max(self.last_publish, float(pt.max()))
                if len(keep):
                    self.lat_ms.append((arrived - keep) * 1000)
        with self.lock:
            self.batches.append(b)


def run(spark, build: Build, rate: int, tag: str, scratch: str, warmup: float, window: float,
        options: dict[str, str], timeout: float = 300) -> dict:
    server = LoadServer(build, PAYLOAD, 2, "--rate", str(rate))
    try:
        sub = f"projects/bench/subscriptions/lat-{tag}"
        create(build, server, "projects/bench/topics/lat", [sub])
        r = spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", server.host)
        for k, v in options.items():
            r = r.option(k, v)
        ckpt = tempfile.mkdtemp(prefix="ckpt-", dir=scratch)
        t0 = time.time()
        col = Collector(warmup, window)
        q = (r.load().writeStream.foreachBatch(col).option("checkpointLocation", ckpt)
             .trigger(processingTime="0 seconds").start())
        try:
            while time.time() - t0 < timeout:
                time.sleep(0.5)
                if q.exception() is not None:
                    raise RuntimeError(f"query failed: {q.exception()}")
                with col.lock:
                    if col.last_publish >= col.t_to + 1:  # stragglers of other partitions came too
                        break
            else:
                raise RuntimeError(f"rows published up to {warmup + window:.0f}s after the first did not arrive "
                                   f"within {timeout}s (rate {rate})")
            # Spark's own split of each trigger (latestOffset, queryPlanning,
            # walCommit, addBatch = the foreachBatch call, commitOffsets, ...).
            phases: dict[str, list[float]] = {}
            for p in q.recentProgress:
                if p["numInputRows"] > 0:
                    for k, v in p["durationMs"].items():
                        phases.setdefault(k, []).append(v)
            running = server.stats()  # before the stop: a stopped query nacks what its tasks had taken
        finally:
            q.stop()
            shutil.rmtree(ckpt, ignore_errors=True)
        st = server.stats()
    finally:
        server.stop()
    if not col.lat_ms:
        raise RuntimeError(f"no rows published in the window arrived; t0 {t0:.3f}, batches: {col.batches[:20]}")
    lat = np.concatenate(col.lat_ms)
    counted = [b for b in col.batches if b.get("counted")]
    gaps = [b["entered"] - a["entered"] - a["read_ms"] / 1000 for a, b in zip(counted, counted[1:], strict=False)]
    return {"rate": rate, "rows": int(len(lat)), "p50_ms": float(np.percentile(lat, 50)),
            "p90_ms": float(np.percentile(lat, 90)), "p99_ms": float(np.percentile(lat, 99)),
            "max_ms": float(lat.max()), "batches": len(counted),
            "rows_per_batch": float(np.mean([b["rows"] for b in counted])),
            "read_ms_median": float(np.median([b["read_ms"] for b in counted])),
            "between_batches_ms_median": float(np.median(gaps) * 1000) if gaps else 0.0,
            "newest_ms_median": float(np.median([b["newest_ms"] for b in counted])),
            "redelivered": st.get("redelivered"),
            # Why they came again: deadlines that ran out, or nacks.
            "expired": st.get("expired"), "nacks": st.get("nacks"),
            "redelivered_before_stop": running.get("redelivered"), "nacks_before_stop": running.get("nacks"),
            # Streams open before the stop: more than streamsPerPartition per
            # task means the subscribers took the traffic for a backlog
            # (catchUpStreamsPerPartition).
            "streams_before_stop": running.get("streams_active"),
            "progress_ms_median": {k: float(np.median(v)) for k, v in phases.items()}}


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted({r["rate"] for r in runs})
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for key, label in (("p50_ms", "p50"), ("p99_ms", "p99")):
        med = [statistics.median(r[key] for r in runs if r["rate"] == x) for x in rates]
        lo = [m - min(r[key] for r in runs if r["rate"] == x) for m, x in zip(med, rates, strict=True)]
        hi = [max(r[key] for r in runs if r["rate"] == x) - m for m, x in zip(med, rates, strict=True)]
        ax.errorbar(rates, med, yerr=[lo, hi], marker="o", capsize=3, label=label)
    ax.axhline(300, color="grey", ls=":", lw=1, label="target p50 at 10k (300 ms)")
    ax.axhline(1000, color="grey", ls="--", lw=1, label="target p99 at 10k (1 s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("publish rate, 1 KB messages / s")
    ax.set_ylabel("publish_time -> foreachBatch arrival, ms")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("pubsub-go source latency, default options (median, bars: min-max)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="10000,100000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--window", type=float, default=20)
    ap.add_argument("--lib")
    ap.add_argument("--option", action="append", default=[])
    ap.add_argument("--plot", default=str(BENCH / "results" / "latency.png"))
    ap.add_argument("--json")
    a = ap.parse_args()
    options = dict(o.split("=", 1) for o in a.option)
    rates = [int(x) for x in a.rates.split(",")]
    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="latency-")
    runs: list[dict] = []
    try:
        for rep in range(a.reps):
            for rate in rates:  # rates alternate so drifting machine load hits both alike
                row = {"rep": rep, **run(spark, build, rate, f"{rate}-{rep}-{time.time_ns()}", scratch,
                                         a.warmup, a.window, options)}
                runs.append(row)
                print(json.dumps(row), flush=True)
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"options": options, "runs": runs}, indent=1))
    if a.plot:
        plot(runs, Path(a.plot))

    table(runs, rates, options, a.reps)


def table(runs: list[dict], rates: list[int], options: dict[str, str], reps: int) -> None:
    def fmt(rs: list[dict], key: str) -> str:
        v = [r[key] for r in rs]
        return f"{statistics.median(v):,.0f} [{min(v):,.0f}–{max(v):,.0f}]"

    print(f"\noptions: subscriptionId, emulatorHost{''.join(f', {k}={v}' for k, v in options.items())}; "
          f"{reps} run(s) per rate\n")
    print("| rate msg/s | p50 ms | p99 ms | max ms | rows per batch | tasks (toArrow) ms | between batches ms |")
    print("|---|---|---|---|---|---|---|")
    for rate in rates:
        rs = [r for r in runs if r["rate"] == rate]
        print(f"| {rate:,} | {fmt(rs, 'p50_ms')} | {fmt(rs, 'p99_ms')} | {fmt(rs, 'max_ms')} "
              f"| {fmt(rs, 'rows_per_batch')} | {fmt(rs, 'read_ms_median')} | {fmt(rs, 'between_batches_ms_median')} |")
    for rate in rates:
        phases = [r["progress_ms_median"] for r in runs if r["rate"] == rate]
        keys = sorted({k for p in phases for k in p})
        print(f"\n{rate:,} msg/s, Spark's durationMs per trigger (median over runs of each run's median): "
              + ", ".join(f"{k} {statistics.median(p.get(k, 0) for p in phases):,.0f}" for k in keys))


if __name__ == "__main__":
    main()
