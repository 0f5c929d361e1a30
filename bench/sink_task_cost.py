"""One sink task's publisher work outside Spark: 100 Arrow batches of 1000
x 1 KB (a task of the fair-ceiling bench's micro-batch) published into the
load server through pubsub_go's Publisher, then flushed. Prints, per
library, the median over 5 tasks (after a first, warm-up one) of the time
in publish() calls, in the final flush, and the process CPU. Libraries
alternate, each in a fresh process, 3 times.

    python bench/sink_task_cost.py LIB.so [LIB2.so ...]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH / "peers")]

from harness.procs import Build, LoadServer, create  # noqa: E402

TOPIC = "projects/bench/topics/task-cost"
CHILD = r"""
import json, sys, time
import pyarrow as pa
from pubsub_go.client import Publisher, PublisherConfig
batch = pa.record_batch({"payload": pa.array([b"x" * 1024] * 1000, pa.binary())})
p = Publisher(PublisherConfig(topic=sys.argv[1], emulator_host=sys.argv[2]))
out = []
for task in range(6):
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(100):
        p.publish(batch)
    t1 = time.perf_counter()
    p.flush(60000)
    out.append((t1 - t0, time.perf_counter() - t1, time.process_time() - c0))
p.close()
print(json.dumps(out[1:]))
"""


def main() -> None:
    libs = sys.argv[1:]
    if not libs:
        sys.exit(__doc__)
    build = Build.make(libs[0])
    server = LoadServer(build, 1024)
    rows: dict[str, list] = {lib: [] for lib in libs}
    try:
        create(build, server, TOPIC, [])
        for _ in range(3):
            for lib in libs:
                r = subprocess.run([sys.executable, "-c", CHILD, TOPIC, server.host], capture_output=True, text=True,
                                   timeout=300, env={**build.env(), "PUBSUB_GO_LIBRARY": lib})
                if r.returncode != 0:
                    raise RuntimeError(f"{lib}: {r.stderr[-2000:]}")
                rows[lib] += json.loads(r.stdout)
    finally:
        server.stop()
    for lib, got in rows.items():
        pub, flush, cpu = (statistics.median(x[i] for x in got) * 1000 for i in range(3))
        print(f"{os.path.basename(lib)}: per 100,000 x 1 KB: publish calls {pub:.0f} ms, final flush {flush:.0f} ms, "
              f"total {pub + flush:.0f} ms, process CPU {cpu:.0f} ms")


if __name__ == "__main__":
    main()
