"""Spark end to end at 1 KB JSON messages with five typed columns, from
bench/loadserver (--payload-json) into the noop sink, local[2]: the
source's raw mode, schema mode (`format=json`: decoded natively in the Go
data plane), raw mode + Spark's from_json, and a user's decoder module
(`decoder=`, the JSON decoder's WebAssembly build, wasm-decoders/cmd/json,
on the default engine: wasmtime where installed). Rows/s from the queries'
progress (bench/harness/sparkrun.measure). The modes run side by side:
each round measures all three in turn on the same Spark session and server,
so that load from other work on a shared machine falls on all of them; the
figures are medians over the rounds, with their spread, and the ratios are
taken per round. Run by bench/tools/decode_bench.py, or alone:

    python bench/tools/spark_decode_e2e.py [--rounds 3] [--warmup 6] [--window 10] [--batch-size 1000 [10000 ...]]
                                     [--modes MODE ...] [--cpu] [--lib PATH] [--option KEY=VALUE ...]

--cpu also samples every process's CPU over each mode's window and prints
it per row (µs of CPU per row: Spark's JVM, its Python workers, the load
server), which is what the modes compare on when the cores are saturated.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from spark_cpu import cpu_by_process  # noqa: E402

from harness.procs import Build, LoadServer, create  # noqa: E402
from harness.spark_e2e import TUNED  # noqa: E402
from harness.sparkrun import measure, session  # noqa: E402

DDL = "id BIGINT, name STRING, score DOUBLE, ok BOOLEAN, at TIMESTAMP"  # = jsonPayload in bench/loadserver
MODES = ("raw", "schema mode", "raw + from_json", "wasm decoder")
WASM_JSON = Path(tempfile.gettempdir()) / f"decode-e2e-json-{os.getpid()}.wasm"  # built on first use


def reader(spark, mode: str, host: str, sub: str, batchlog: str, batch_size: int,
           extra: dict[str, str] | None = None):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
         .option("numPartitions", "2").option("batchLogLocation", batchlog).option("batchSize", str(batch_size)))
    for k, v in {**TUNED, **(extra or {})}.items():
        r = r.option(k, v)
    if mode == "schema mode":
        return r.option("format", "json").schema(DDL).load()
    if mode == "wasm decoder":
        if not WASM_JSON.exists():
            subprocess.run(["bash", str(BENCH.parent / "wasm-decoders" / "build-guest.sh"), str(WASM_JSON), "cmd/json"],
                           check=True)
        return r.option("decoder", str(WASM_JSON)).schema(DDL).load()
    df = r.load()
    if mode == "raw + from_json":
        return df.selectExpr(f"from_json(CAST(payload AS STRING), '{DDL}') AS r").select("r.*")
    return df


def key(mode: str, batch_size: int, batch_sizes: list[int]) -> str:
    return mode if len(batch_sizes) == 1 else f"{mode}, batchSize {batch_size}"


class CpuSampler:
    """CPU seconds of every process below this one (and this one) over
    [start + delay, start + delay + span]: a thread, so it overlaps measure()."""

    def __init__(self, delay: float, span: float) -> None:
        self.cores: dict[str, float] = {}
        self._t = threading.Thread(target=self._run, args=(delay, span), daemon=True)
        self._t.start()

    def _run(self, delay: float, span: float) -> None:
        time.sleep(delay)
        before, t0 = cpu_by_process(), time.time()
        time.sleep(span)
        after, dt = cpu_by_process(), time.time() - t0
        self.cores = {k: (after[k] - before.get(k, 0.0)) / dt for k in after}

    def per_row(self, rows_per_sec: float) -> dict[str, float]:
        """µs of CPU per row, by process (Python workers summed)."""
        self._t.join(timeout=60)
        out: dict[str, float] = {}
        for k, v in self.cores.items():
            name = "python workers" if k.startswith("python ") else k
            out[name] = out.get(name, 0.0) + v / rows_per_sec * 1e6
        out["total"] = sum(out.values())
        return out


def run(warmup: float = 6.0, window: float = 10.0, size: int = 1024, rounds: int = 3,
        batch_sizes: list[int] | None = None, modes: tuple[str, ...] = MODES, cpu: bool = False,
        lib: str | None = None, extra: dict[str, str] | None = None) -> dict[str, list[float]]:
    """Rows/s per mode (and per batch size, the source's batchSize: rows per
    pull and per Arrow batch, the same in every mode), one figure per round.
    With cpu, also µs of CPU per row by process, under "<figure>: cpu <process>"."""
    sizes = batch_sizes or [1000]
    build = Build.make(lib)
    spark = session(build)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    scratch = tempfile.mkdtemp(prefix="decode-e2e-")
    server = LoadServer(build, size, 2, "--payload-json")
    out: dict[str, list[float]] = {key(m, b, sizes): [] for b in sizes for m in modes}
    try:
        subs = {m: f"projects/bench/subscriptions/decode-{i}" for i, m in enumerate(MODES)}
        create(build, server, "projects/bench/topics/decode", list(subs.values()))
        for r in range(rounds):
            for b in sizes:
                for mode in modes:
                    batchlog = tempfile.mkdtemp(prefix="batchlog-", dir=scratch)
                    # Sampled inside the counted window (measure starts counting after warmup).
                    sampler = CpuSampler(warmup + 2, max(window - 4, 2)) if cpu else None
                    df = reader(spark, mode, server.host, subs[mode], batchlog, b, extra)
                    m = measure(df, scratch, warmup, window)
                    k = key(mode, b, sizes)
                    out[k].append(m["rows_per_sec"])
                    print(f"round {r + 1}, {k}: {m['rows_per_sec']:,.0f} rows/s over "
                          f"{m['batches']} micro-batches", flush=True)
                    if sampler is not None:
                        per_row = sampler.per_row(m["rows_per_sec"])
                        for proc, us in per_row.items():
                            out.setdefault(f"{k}: cpu µs/row, {proc}", []).append(us)
                        print("    CPU µs per row: " + ", ".join(f"{p} {us:.2f}" for p, us in per_row.items()),
                              flush=True)
    finally:
        server.stop()
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(build.dir, ignore_errors=True)
    return out


def summary(res: dict[str, list[float]]) -> dict[str, tuple[float, float, float]]:
    """Median, min and max of each figure's rows/s and of the per-round
    ratios "schema mode / raw" and "schema mode / raw + from_json" (per
    batch size)."""
    series = dict(res)
    for k in res:
        if not k.startswith("schema mode") or ": cpu" in k:
            continue
        suffix = k[len("schema mode"):]
        if "raw" + suffix not in res or "raw + from_json" + suffix not in res:
            continue
        raw, fj = res["raw" + suffix], res["raw + from_json" + suffix]
        series[f"schema mode / raw{suffix}"] = [s / r for s, r in zip(res[k], raw, strict=True)]
        series[f"schema mode / (raw + from_json){suffix}"] = [s / f for s, f in zip(res[k], fj, strict=True)]
        if "wasm decoder" + suffix in res:
            series[f"wasm decoder / schema mode{suffix}"] = [
                w / s for w, s in zip(res["wasm decoder" + suffix], res[k], strict=True)]
    return {k: (statistics.median(v), min(v), max(v)) for k, v in series.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=6.0)
    ap.add_argument("--window", type=float, default=10.0)
    ap.add_argument("--batch-size", type=int, nargs="+", default=[1000],
                    help="the source's batchSize, the same in every mode; several: each measured in every round")
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                    help="the modes to run (default all; the ratios need raw, schema mode and raw + from_json)")
    ap.add_argument("--cpu", action="store_true", help="also µs of CPU per row by process, per mode")
    ap.add_argument("--lib", help="libpubsubgo.so to use instead of building one from the tree "
                    "(e.g. one built with symbols, for perf)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a source option for every mode, over the tuned ones (e.g. maxRecordsPerPartition=1000000)")
    args = ap.parse_args()
    extra = dict(o.split("=", 1) for o in args.option)
    res = run(args.warmup, args.window, rounds=args.rounds, batch_sizes=args.batch_size,
              modes=tuple(args.modes), cpu=args.cpu, lib=args.lib, extra=extra)
    for k, (med, lo, hi) in summary(res).items():
        print(f"{k}: median {med:,.2f} (min {lo:,.2f}, max {hi:,.2f})")


if __name__ == "__main__":
    main()
