"""Where the Spark sink's time goes beside its fair ceiling: runs the
in-memory Arrow source (payload column, 1 KB) into the pubsub-go sink and
into `bench-discard` (a Python Arrow stream writer that drops its input),
alternating, and prints msgs/s and the CPU of each process (Spark's JVM,
its Python workers, the load server, the driver) over 8 s of each run.

    python bench/sink_cpu.py [--reps 2] [--lib PATH]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from harness import write  # noqa: E402
from harness.procs import Build, LoadServer, create  # noqa: E402
from harness.sparkrun import measure, session  # noqa: E402
from spark_cpu import cpu_by_process  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--lib")
    a = ap.parse_args()
    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="sink-cpu-")
    server = LoadServer(build, write.SIZE)
    try:
        create(build, server, write.TOPIC, [])
        for rep in range(a.reps):
            for sink in ("pubsub-go", "bench-discard"):
                cpu: dict[str, float] = {}

                def sample(cpu: dict[str, float] = cpu) -> None:
                    time.sleep(7)  # past measure()'s warm-up
                    before, t0 = cpu_by_process(), time.time()
                    time.sleep(8)
                    after, dt = cpu_by_process(), time.time() - t0
                    cpu.update({k: (after[k] - before.get(k, 0.0)) / dt for k in after})

                t = threading.Thread(target=sample)
                t.start()
                opts = {"topicId": write.TOPIC, "emulatorHost": server.host} if sink == "pubsub-go" else {}
                m = measure(write._source(spark), scratch, 6, 12, sink=sink, sink_options=opts)
                t.join()
                workers = sorted((v for k, v in cpu.items() if k.startswith("python")), reverse=True)
                print(f"run {rep + 1} {sink}: {m['rows_per_sec']:,.0f} msgs/s; cores: JVM {cpu.get('java', 0):.2f}, "
                      f"Python workers {' + '.join(f'{w:.2f}' for w in workers if w >= 0.01)}, "
                      f"load server {cpu.get('loadserver', 0):.2f}, driver {cpu.get('driver (this process)', 0):.2f}, "
                      f"total {sum(cpu.values()):.2f}", flush=True)
    finally:
        server.stop()
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
