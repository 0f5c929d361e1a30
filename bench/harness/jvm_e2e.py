"""Section 2b, the JVM source beside the Python ones: Spark end to end
(readStream into noop, local[2], 1 KB from the load server, default
options as section 2's pubsub-go-defaults) for the JVM DataSource V2
source (docs/jvm.md), the Python source (`pubsub-go-defaults`) and the
ceiling (the in-memory Python `bench-arrow` source), in alternating rounds.

With the jar on a session's classpath, format("pubsub-go") is the JVM
source, so the JVM source runs in a Spark session of its own: a child
process (`python -m harness.jvm_e2e --serve`, its SparkSession built with
pubsub_go.configure_spark) that measures one query per request on stdin
and answers with one JSON line. The Python sources run in the caller's
session, which has no jar. Each session stays up for all rounds, warmed
once; while one measures, the other idles (its CPU is counted apart).

Per run, besides rows/s (sparkrun.measure): the CPU of each process over
the window after the warm-up (the process holding the session, its Spark
JVM, the JVM's Python workers, the load server, and the other session,
idle), and memory sampled every 0.5 s: the Spark JVM's RSS (native memory
included: the Go runtime, Arrow batches in C memory), its Java heap
committed (MemoryMXBean through py4j), and the Python workers' RSS.
local[2] has one JVM, driver and executor together, so its figures bound
an executor's from above.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from .log import say
from .plan import Plan
from .procs import REPO, Build, LoadServer, create

SOURCES = ("jvm", "pubsub-go-defaults", "ceiling")
# Receiving alone, no Spark: pubsub_go's Subscriber (into pyarrow, acking
# every batch) reading the same load server with one stream per task of a
# source (numPartitions=2). What any source on this data plane pays per row
# before Spark sees it, with the load server's share: a floor under the JVM
# source's CPU per row, beside the ceiling's whole pipeline.
RECEIVE = "receive-only"
RECEIVE_STREAMS = 2
MIB = 2**20
# Spark's default spark.executor.memoryOverhead: max(384 MiB, 10% of spark.executor.memory).
DEFAULT_OVERHEAD_MIB = 384


def build_jar(build: Build) -> Path:
    """The JVM source's jar from this tree's jvm/ (jvm/build.sh), with the
    library the run built inside; into the build dir."""
    out = build.dir / "pubsub-go-spark.jar"
    r = subprocess.run(["bash", str(REPO / "jvm" / "build.sh"), "--lib", str(build.lib), "--out", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"jvm/build.sh failed:\n{r.stderr[-3000:]}")
    return out


def jvm_tree_state() -> str:
    """HEAD and whether jvm/ differs from it: the jar measures the tree."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "jvm"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    return f"{head.strip()}{' with jvm/ modified' if dirty else ''}"


# -- measuring one run, in whichever process holds the session ----------------

def _cpu(p: psutil.Process) -> float:
    try:
        t = p.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


class Probe:
    """CPU by process between the warm-up's end and the window's end
    (sparkrun.measure's probe), and memory samples every 0.5 s.

    Roles: "driver" this process (it holds the session); "jvm" its Spark
    JVM (java children); "workers" the JVM's Python descendants (task
    workers, the streaming source runner); "loadserver"; "other" the other
    session (idle), i.e. the processes under other_root not counted above."""

    def __init__(self, spark, loadserver_pid: int, other_root: int | None) -> None:
        self.spark = spark
        self.me = psutil.Process()
        self.loadserver = psutil.Process(loadserver_pid)
        self.other_root = psutil.Process(other_root) if other_root else None
        self.cpu0: dict[str, float] = {}
        self.t0 = 0.0
        self.cores: dict[str, float] = {}
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._sample, daemon=True)
        self._t.start()

    def roles(self) -> dict[str, list[psutil.Process]]:
        try:
            jvms = [c for c in self.me.children() if "java" in c.name()]
        except psutil.Error:
            jvms = []
        workers = [d for j in jvms for d in _tree(j)[1:] if "python" in _name(d)]
        mine = {p.pid for p in [self.me, *jvms, *workers, self.loadserver]}
        other = [p for p in _tree(self.other_root) if p.pid not in mine] if self.other_root else []
        return {"driver": [self.me], "jvm": jvms, "workers": workers, "loadserver": [self.loadserver],
                "other": other}

    def cpu(self) -> dict[str, float]:
        return {k: sum(_cpu(p) for p in ps) for k, ps in self.roles().items()}

    def __call__(self, stage: str, q) -> None:
        if stage == "warm":
            self.cpu0, self.t0 = self.cpu(), time.time()
        elif stage == "end" and self.t0:
            c, dt = self.cpu(), time.time() - self.t0
            self.cores = {k: (v - self.cpu0.get(k, 0.0)) / dt for k, v in c.items()}
            self.cores["seconds"] = dt

    def _heap(self) -> tuple[float, float]:
        mx = self.spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()  # noqa: SLF001
        h = mx.getHeapMemoryUsage()
        return h.getCommitted() / MIB, h.getUsed() / MIB

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            r = self.roles()
            try:
                jvm_rss = sum(p.memory_info().rss for p in r["jvm"]) / MIB
                workers_rss = sum(p.memory_info().rss for p in r["workers"]) / MIB
                committed, used = self._heap()
            except Exception:  # a process gone, py4j busy at the stop: skip the sample
                continue
            self.samples.append({"jvm_rss_mb": jvm_rss, "heap_committed_mb": committed, "heap_used_mb": used,
                                 "workers_rss_mb": workers_rss})

    def stop(self) -> dict:
        self._stop.set()
        self._t.join(timeout=5)
        hwm = 0.0
        for p in self.roles()["jvm"]:
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    hwm += next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
            except (OSError, StopIteration):
                pass
        s = self.samples
        out: dict = {"jvm_vmhwm_mb": hwm}
        if s:
            out.update({
                "peak_jvm_rss_mb": max(x["jvm_rss_mb"] for x in s),
                "peak_heap_committed_mb": max(x["heap_committed_mb"] for x in s),
                "peak_heap_used_mb": max(x["heap_used_mb"] for x in s),
                # what the JVM holds outside its heap: JVM internals and native libraries
                "peak_non_heap_mb": max(x["jvm_rss_mb"] - x["heap_committed_mb"] for x in s),
                "peak_workers_rss_mb": max(x["workers_rss_mb"] for x in s),
                "peak_outside_heap_mb": max(x["jvm_rss_mb"] - x["heap_committed_mb"] + x["workers_rss_mb"]
                                            for x in s),
            })
        return out


def _name(p: psutil.Process) -> str:
    try:
        return p.name()
    except psutil.Error:
        return ""


def measure_one(spark, df, scratch: str, warmup: float, window: float, loadserver_pid: int,
                other_root: int | None, check_jvm: bool = False, perf: str | None = None) -> dict:
    """perf: a file for `perf record -g` of the Spark JVM over the window
    (bench/tools/jvm_e2e.py --perf; build the library with its symbols)."""
    from .sparkrun import measure

    probe = Probe(spark, loadserver_pid, other_root)
    front: list = []
    recorder: list[subprocess.Popen] = []

    def hook(stage: str, q) -> None:
        probe(stage, q)
        if stage == "warm" and perf:
            pids = ",".join(str(j.pid) for j in probe.roles()["jvm"])
            recorder.append(subprocess.Popen(["perf", "record", "-g", "-F", "499", "-p", pids, "-o", perf, "--",
                                              "sleep", str(max(window - 2, 2))],
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=open(perf + ".log", "w")))  # noqa: SIM115 - perf's own
        if stage == "end" and check_jvm:
            src = (q.lastProgress or {}).get("sources") or [{}]
            end = src[0].get("endOffset")
            try:
                end = json.loads(end) if isinstance(end, str) else end
            except ValueError:
                pass
            front.append(end)

    try:
        m = measure(df, scratch, warmup, window, probe=hook)
    finally:
        mem = probe.stop()
        for r in recorder:
            r.wait(timeout=60)
    if check_jvm and not any(isinstance(f, dict) and f.get("frontEnd") == "jvm" for f in front):
        raise RuntimeError(f"format('pubsub-go') did not read through the JVM source: end offset {front[:1]}")
    m.pop("progress", None)
    cores = probe.cores
    rps = m["rows_per_sec"]
    per_row = {k: v / rps * 1e6 for k, v in cores.items() if k != "seconds"} if rps else {}
    return {**m, "cores": cores, "cpu_us_per_row": per_row,
            "cpu_us_per_row_total": sum(v for k, v in per_row.items() if k != "other"), **mem}


# -- the JVM session, in a process of its own ---------------------------------

class JvmSession:
    """The child process holding a Spark session with the jar: the JVM
    source's (MODULE); a subclass names another child serving the same
    protocol (serve_requests)."""

    MODULE = "harness.jvm_e2e"
    LOG = "jvm-session.log"

    def __init__(self, build: Build, jar: Path, scratch: str) -> None:
        self.log = open(build.dir / self.LOG, "ab")  # noqa: SIM115 - closed in stop()
        env = build.env()
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "bench"), env["PYTHONPATH"]])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.MODULE, "--serve", "--build-dir", str(build.dir),
             "--lib", str(build.lib), "--jar", str(jar), "--scratch", scratch],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=REPO, text=True)
        self.pid = self.proc.pid
        hello = self._answer(timeout=300)
        if not hello.get("ready"):
            raise RuntimeError(f"the Spark session of {self.MODULE} did not start: {hello}")
        self.spark_version = hello.get("spark")

    def _answer(self, timeout: float) -> dict:
        out: list[str] = []
        t = threading.Thread(target=lambda: out.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        if not out or not out[0]:
            self.stop()
            raise RuntimeError(f"the JVM session {'timed out' if not out else 'exited'}; see {self.log.name}")
        return json.loads(out[0])

    def run(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        a = self._answer(timeout=req.get("warmup", 0) + 300)
        if "error" in a:
            raise RuntimeError(a["error"])
        return a

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # EOF: the child stops Spark and exits
                self.proc.wait(timeout=90)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.log.close()


def serve_requests(a: argparse.Namespace, measure, setup=None) -> int:
    """A child's side of JvmSession's protocol: one SparkSession with the
    jar (setup(spark) once), then measure(spark, request) per request line on
    stdin, each answer (or its error) a JSON line on the original stdout."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything Spark or py4j prints goes to the log, not the answers
    build = Build(Path(a.build_dir), Path(), Path(), Path(), Path(a.lib))
    from .sparkrun import session

    spark = session(build, jar=a.jar)
    if setup is not None:
        setup(spark)
    proto.write(json.dumps({"ready": True, "spark": spark.version}) + "\n")
    try:
        for line in sys.stdin:
            try:
                m = measure(spark, json.loads(line))
            except Exception as e:
                m = {"error": f"{type(e).__name__}: {str(e)[:1500]}"}
            proto.write(json.dumps(m) + "\n")
    finally:
        spark.stop()
    return 0


def serve(a: argparse.Namespace) -> int:
    """The child: one SparkSession with the jar, one query per request."""

    def one(spark, req: dict) -> dict:
        from .spark_e2e import reader

        batchlog = tempfile.mkdtemp(prefix="batchlog-", dir=a.scratch)
        try:
            df = reader(spark, "pubsub-go-defaults", req["host"], req["sub"], 1024, batchlog)
            return measure_one(spark, df, a.scratch, req["warmup"], req["window"], req["loadserver_pid"],
                               os.getppid(), check_jvm=True, perf=req.get("perf"))
        finally:
            shutil.rmtree(batchlog, ignore_errors=True)

    return serve_requests(a, one)


def child_main(serve, harness: str, tool: str) -> int:
    """A session child's command line (JvmSession starts it with --serve)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--build-dir")
    ap.add_argument("--lib")
    ap.add_argument("--jar")
    ap.add_argument("--scratch")
    a = ap.parse_args()
    if not a.serve:
        ap.error(f"run by {harness} (--serve); see {tool}")
    return serve(a)


# -- the rounds ----------------------------------------------------------------

def run(spark, build: Build, plan: Plan, scratch: str, jar: str | None = None, rounds: int | None = None,
        warmup: float | None = None, window: float | None = None, perf: str | None = None) -> dict:
    """spark: the caller's session (no jar, the Python sources registered).
    jar: the JVM source's jar; None builds it from this tree. perf: record
    the JVM session's last JVM-source run with `perf record -g` into it."""
    rounds = rounds or plan.reps
    warmup = plan.spark_warmup if warmup is None else warmup
    window = plan.spark_window if window is None else window
    if jar is None:
        say("2b JVM: building the jar from jvm/ (jvm/build.sh)")
        jar_path, jar_from = build_jar(build), f"built from the tree ({jvm_tree_state()}) by jvm/build.sh"
    else:
        jar_path, jar_from = Path(jar), jar
    res: dict = {"jar": jar_from, "rounds": rounds, "warmup": warmup, "window": window, "rows": []}
    from .spark_e2e import reader

    server = LoadServer(build, 1024)
    jvm = None
    try:
        subs = {(s, r): f"projects/bench/subscriptions/jvm-{s}-{r}" for s in SOURCES for r in range(rounds)}
        subs.update({("warm", s): f"projects/bench/subscriptions/jvm-warm-{s}" for s in SOURCES})
        subs.update({(RECEIVE, r): f"projects/bench/subscriptions/jvm-{RECEIVE}-{r}" for r in range(rounds)})
        create(build, server, "projects/bench/topics/jvm", list(subs.values()))
        say("2b JVM: starting the JVM source's Spark session (a process of its own, the jar on it)")
        jvm = JvmSession(build, jar_path, scratch)
        res["spark_version_jvm_session"] = jvm.spark_version
        # A fresh JVM spends a quarter of its CPU in the JIT compilers for
        # the first ~20 s of reading (perf of the JVM session, thread names
        # C1/C2 CompilerThread): warm the new session that long, and each
        # source of the other once.
        say("2b JVM: warm-up of both sessions (not counted)")
        jvm.run(host=server.host, sub=subs[("warm", "jvm")], warmup=2, window=max(3 * window, 20),
                loadserver_pid=server.proc.pid)
        for s in SOURCES[1:]:
            bl = tempfile.mkdtemp(prefix="batchlog-", dir=scratch)
            measure_one(spark, reader(spark, s, server.host, subs[("warm", s)], 1024, bl), scratch, 2, window,
                        server.proc.pid, jvm.pid)
        for r in range(rounds):
            order = SOURCES[r % 3:] + SOURCES[:r % 3]  # each source first in turn
            for source in order:
                if source == "jvm":
                    _record(res, source, r, rounds, lambda r=r: jvm.run(
                        host=server.host, sub=subs[("jvm", r)], warmup=warmup, window=window,
                        loadserver_pid=server.proc.pid, perf=perf if r == rounds - 1 else None))
                else:
                    bl = tempfile.mkdtemp(prefix="batchlog-", dir=scratch)
                    _record(res, source, r, rounds, lambda s=source, b=bl, r=r: measure_one(
                        spark, reader(spark, s, server.host, subs[(s, r)], 1024, b), scratch, warmup, window,
                        server.proc.pid, jvm.pid))
            _record(res, RECEIVE, r, rounds,
                    lambda r=r: receive_only(build, server, subs[(RECEIVE, r)], warmup, window))
    finally:
        if jvm is not None:
            jvm.stop()
        server.stop()
    res.update(summarize(res["rows"]))
    return res


def _record(res: dict, source: str, r: int, rounds: int, take) -> None:
    """One measurement into res["rows"], or its error: a failed run is
    reported with the others, not raised."""
    try:
        m = take()
    except Exception as e:
        say(f"2b JVM round {r + 1} {source} FAILED: {e}")
        res["rows"].append({"source": source, "round": r, "error": str(e)[:500]})
        return
    res["rows"].append({"source": source, "round": r, **m})
    memory = (f", JVM RSS peak {m['peak_jvm_rss_mb']:.0f} MB (outside the heap {m.get('peak_non_heap_mb', 0):.0f} MB)"
              if "peak_jvm_rss_mb" in m else "")
    say(f"2b JVM round {r + 1}/{rounds} {source}: {m['rows_per_sec']:,.0f} rows/s, "
        f"{m['cpu_us_per_row_total']:.2f} µs CPU/row{memory}")


def receive_only(build: Build, server: LoadServer, sub: str, warmup: float, window: float) -> dict:
    """RECEIVE: bench/peers/pgreceive.py for warmup + window. The receiver's
    CPU is over its window (its own count); the load server's per message
    delivered over the whole run (its /stats), the same rate either way."""
    from .procs import py, run_peer

    cpu0, sent0 = server.cpu_seconds(), server.stats()["delivered"]
    r = run_peer(py("pgreceive.py", "--emulator-host", server.host, "--subscription", sub, "--warmup", str(warmup),
                    "--duration", str(window), "--streams", str(RECEIVE_STREAMS), "--max-outstanding", "10000",
                    "--max-outstanding-bytes", str(1 << 30)), build.env(), timeout=warmup + window + 120)
    cpu1, sent1 = server.cpu_seconds(), server.stats()["delivered"]
    n, rps = r.data["messages"], r.data["msgs_per_sec"]
    per_row = {"receiver": r.data["cpu_seconds"] / n * 1e6 if n else 0.0,
               "loadserver": (cpu1 - cpu0) / (sent1 - sent0) * 1e6 if sent1 > sent0 else 0.0}
    return {"rows_per_sec": rps, "cpu_us_per_row": per_row, "cpu_us_per_row_total": sum(per_row.values())}


def summarize(rows: list[dict]) -> dict:
    """Per-round ratios, and the memoryOverhead advice."""
    by = {(r["source"], r["round"]): r for r in rows if "error" not in r}
    ratios = []
    for r in sorted({k[1] for k in by}):
        j, c, d = by.get(("jvm", r)), by.get(("ceiling", r)), by.get(("pubsub-go-defaults", r))
        ratios.append({"round": r,
                       "jvm_vs_ceiling": j["rows_per_sec"] / c["rows_per_sec"] if j and c else None,
                       "jvm_vs_python": j["rows_per_sec"] / d["rows_per_sec"] if j and d else None,
                       "python_vs_ceiling": d["rows_per_sec"] / c["rows_per_sec"] if d and c else None})
    out: dict = {"ratios": ratios}
    jv = [r for r in rows if r["source"] == "jvm" and "peak_non_heap_mb" in r]
    py = [r for r in rows if r["source"] == "pubsub-go-defaults" and "peak_outside_heap_mb" in r]
    if jv:
        peak = max(r["peak_non_heap_mb"] for r in jv)
        advice = max(DEFAULT_OVERHEAD_MIB, _round_up(peak * 1.25, 128))
        out["overhead"] = {"jvm_peak_non_heap_mb": peak, "jvm_peak_rss_mb": max(r["peak_jvm_rss_mb"] for r in jv),
                           "advice_mib": advice}
        if py:
            out["overhead"]["python_peak_outside_heap_mb"] = max(r["peak_outside_heap_mb"] for r in py)
    return out


def _round_up(x: float, step: int) -> int:
    return int(-(-x // step) * step)


def main() -> int:
    return child_main(serve, "bench/harness/jvm_e2e.py", "bench/tools/jvm_e2e.py")


if __name__ == "__main__":
    sys.exit(main())
