"""Where the Spark sink's time goes beside its fair ceiling: runs the
in-memory Arrow source (payload column, 1 KB) into the pubsub-go sink and
into `bench-discard` (a Python Arrow stream writer that drops its input),
alternating, and prints msgs/s and the CPU of each process (Spark's JVM,
its Python workers, the load server, the driver) over 8 s of each run
(every other repetition in reverse order), then
the median and range of the per-repetition ratios sink / fair ceiling.
`--no-pool` adds a run of the sink with publisherIdleMs=0 (a publisher
opened and closed per task, as before the pool) to each repetition.
`--perf` records the whole machine with `perf record -a -g` during the
last repetition's pubsub-go sink window into /tmp/pubsub-go-sink.perf
(a library built without -s -w names the Go symbols).

    python bench/tools/sink_cpu.py [--reps 2] [--lib PATH] [--no-pool] [--perf]
"""

from __future__ import annotations

import argparse
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

from harness import write  # noqa: E402
from harness.procs import Build, LoadServer, create  # noqa: E402
from harness.sparkrun import measure, session  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--lib")
    ap.add_argument("--no-pool", action="store_true")
    ap.add_argument("--perf", action="store_true")
    a = ap.parse_args()
    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="sink-cpu-")
    server = LoadServer(build, write.SIZE)
    try:
        create(build, server, write.TOPIC, [])
        runs = ["pubsub-go", *(["pubsub-go-no-pool"] if a.no_pool else []), "bench-discard"]
        rates: dict[str, list[float]] = {r: [] for r in runs}
        for rep in range(a.reps):
            # Every other repetition runs in reverse, so neither side always
            # goes first (the machine's load drifts within a repetition).
            for sink in runs if rep % 2 == 0 else runs[::-1]:
                cpu: dict[str, float] = {}

                record = a.perf and sink == "pubsub-go" and rep == a.reps - 1

                def sample(cpu: dict[str, float] = cpu, record: bool = record) -> None:
                    time.sleep(7)  # past measure()'s warm-up
                    before, t0 = cpu_by_process(), time.time()
                    if record:
                        subprocess.run(["perf", "record", "-a", "-g", "-F", "499", "-o", "/tmp/pubsub-go-sink.perf",
                                        "--", "sleep", "8"], check=True, capture_output=True)
                    else:
                        time.sleep(8)
                    after, dt = cpu_by_process(), time.time() - t0
                    cpu.update({k: (after[k] - before.get(k, 0.0)) / dt for k in after})

                t = threading.Thread(target=sample)
                t.start()
                opts = {"topicId": write.TOPIC, "emulatorHost": server.host} if sink != "bench-discard" else {}
                if sink == "pubsub-go-no-pool":
                    opts["publisherIdleMs"] = "0"
                m = measure(write._source(spark), scratch, 6, 12, sink=sink.removesuffix("-no-pool"),
                            sink_options=opts)
                rates[sink].append(m["rows_per_sec"])
                t.join()
                workers = sorted((v for k, v in cpu.items() if k.startswith("python")), reverse=True)
                print(f"run {rep + 1} {sink}: {m['rows_per_sec']:,.0f} msgs/s; cores: JVM {cpu.get('java', 0):.2f}, "
                      f"Python workers {' + '.join(f'{w:.2f}' for w in workers if w >= 0.01)}, "
                      f"load server {cpu.get('loadserver', 0):.2f}, driver {cpu.get('driver (this process)', 0):.2f}, "
                      f"total {sum(cpu.values()):.2f}", flush=True)
        for sink in runs[:-1]:
            ratios = [x / c for x, c in zip(rates[sink], rates["bench-discard"], strict=True)]
            print(f"{sink}: median {statistics.median(rates[sink]):,.0f} msgs/s; fair ceiling median "
                  f"{statistics.median(rates['bench-discard']):,.0f}; ratio (median of pairs) "
                  f"{statistics.median(ratios):.2f}x, range {min(ratios):.2f}-{max(ratios):.2f}", flush=True)
    finally:
        server.stop()
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
