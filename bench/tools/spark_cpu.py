"""Where a Spark end-to-end run spends its CPU: runs one source of section 2
(into noop, local[2], 1 KB messages) and prints rows/s, the CPU of each
process (Spark's JVM, its Python workers, the load server, the driver) over
8 s, the durations Spark reports for the last micro-batches, and the load
server's redelivery work (streams opened, nacks, expired leases).

    python bench/tools/spark_cpu.py [pubsub-go|pubsub-go-defaults|plain-python|ceiling]
                              [--perf | --pyspy | --mappings] [--lib PATH] [--option key=value ...]

--perf records the whole machine with `perf record -a -g` into
/tmp/pubsub-go-spark.perf (build the library without -s -w, pass it with
--lib, to see Go symbols); --pyspy records the busiest Python workers with
`py-spy record --idle` into /tmp/pubsub-go-spark-<pid>.txt (raw stacks);
--mappings counts the busiest workers' mmap and munmap calls and page
faults (`perf stat`) and the machine's transparent huge page faults
(/proc/vmstat thp_fault_alloc) over the window: fresh memory the kernel
zeroes (go/internal/cmem).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

import psutil  # noqa: E402

from harness import spark_e2e  # noqa: E402
from harness.procs import Build, LoadServer, create  # noqa: E402
from harness.sparkrun import measure, session  # noqa: E402


def cpu_by_process() -> dict[str, float]:
    me = psutil.Process()
    out: dict[str, float] = {}
    for p in [me, *me.children(recursive=True)]:
        try:
            name, t = p.name(), p.cpu_times()
        except psutil.Error:
            continue
        key = ("java" if "java" in name else "driver (this process)" if p.pid == me.pid
               else "loadserver" if "loadserver" in name else f"python {p.pid}")
        out[key] = out.get(key, 0.0) + t.user + t.system
    return out


def busy_workers() -> list[psutil.Process]:
    """Spark's Python workers running tasks (over a fifth of a core now)."""
    return [p for p in psutil.Process().children(recursive=True)
            if "python" in p.name() and p.cpu_percent(0.2) > 20]


def count_mappings(workers: list[psutil.Process], seconds: int) -> dict[str, int]:
    """mmap/munmap calls and page faults of workers, and the machine's
    transparent huge page faults, over seconds."""
    def thp() -> int:
        with open("/proc/vmstat") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("thp_fault_alloc "))
    events = ["syscalls:sys_enter_mmap", "syscalls:sys_enter_munmap", "page-faults"]
    before = thp()
    out = subprocess.run(["perf", "stat", "-x", ",", "-e", ",".join(events), "-p",
                          ",".join(str(w.pid) for w in workers), "--", "sleep", str(seconds)],
                         capture_output=True, text=True).stderr
    counts = {"huge page faults (machine)": thp() - before}
    for line in out.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in events and fields[0].isdigit():
            counts[fields[2].removeprefix("syscalls:sys_enter_")] = int(fields[0])
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", nargs="?", default="pubsub-go", choices=spark_e2e.SOURCES)
    ap.add_argument("--perf", action="store_true")
    ap.add_argument("--pyspy", action="store_true")
    ap.add_argument("--mappings", action="store_true")
    ap.add_argument("--lib", help="libpubsubgo.so to use instead of building one from the tree")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="another option for the pubsub-go sources (repeatable)")
    a = ap.parse_args()
    extra = dict(o.split("=", 1) for o in a.option)

    build = Build.make(a.lib)
    spark = session(build)
    scratch = tempfile.mkdtemp(prefix="pubsub-go-spark-cpu-")
    server = None
    try:
        print("JVM warm-up (ceiling source)", file=sys.stderr)
        measure(spark_e2e.reader(spark, "ceiling", "", "", 1024, ""), scratch, warmup=2, window=4)
        server = LoadServer(build, 1024)
        sub = "projects/bench/subscriptions/cpu"
        create(build, server, "projects/bench/topics/cpu", [sub])
        cpu: dict[str, float] = {}
        mappings: dict[str, int] = {}

        def sample() -> None:
            time.sleep(8)  # past the warm-up of measure()
            before, t0 = cpu_by_process(), time.time()
            if a.perf:
                subprocess.run(["perf", "record", "-a", "-g", "-F", "499", "-o", "/tmp/pubsub-go-spark.perf",
                                "--", "sleep", "8"], capture_output=True)
            elif a.pyspy:
                spies = [subprocess.Popen(["py-spy", "record", "--idle", "-r", "100", "-d", "8", "-f", "raw",
                                           "-o", f"/tmp/pubsub-go-spark-{w.pid}.txt", "-p", str(w.pid)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                         for w in busy_workers()]
                for p in spies:
                    p.wait()
            elif a.mappings:
                mappings.update(count_mappings(busy_workers(), 8))
            else:
                time.sleep(8)
            after, dt = cpu_by_process(), time.time() - t0
            cpu.update({k: (after[k] - before.get(k, 0.0)) / dt for k in after})

        t = threading.Thread(target=sample)
        t.start()
        m = measure(spark_e2e.reader(spark, a.source, server.host, sub, 1024, tempfile.mkdtemp(dir=scratch), extra),
                    scratch, 6, 14)
        t.join()
        print(f"{a.source}: {m['rows_per_sec']:,.0f} rows/s, {m['rows_per_batch']:,.0f} rows per micro-batch")
        print("CPU over 8 s (cores):")
        for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]):
            if v >= 0.01:
                print(f"  {k:24s} {v:.2f}")
        print(f"  {'total':24s} {sum(cpu.values()):.2f}")
        if mappings:
            print("busiest workers over 8 s: " + ", ".join(f"{k} {v:,}" for k, v in mappings.items()))
        print("last micro-batches, durationMs:")
        for p in m["progress"][-3:]:
            print("  " + json.dumps(p["durationMs"]))
        # Redelivery work at the server: streams reopened (a subscriber
        # retires a stream paused past its pipe's leases, pipe.go), nacks,
        # leases that ran out. Near zero in a healthy run.
        st = server.stats()
        print("load server: " + ", ".join(f"{k} {st.get(k, 0):,}" for k in
                                          ("delivered", "streams_opened", "nacks", "expired", "redelivered")))
    finally:
        if server is not None:
            server.stop()
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
