"""Section 4, the Go -> Python hand-off: next_batch on messages already
buffered in the subscriber (bench/peers/pghandoff.py), and Go's own
benchmarks of the batch building it contains."""

from __future__ import annotations

import re
import subprocess

from .log import say
from .plan import Plan
from .procs import REPO, Build, LoadServer, create, py, run_peer

GO_BENCHES = [
    ("rawbatch: Append of one decoded 1 KiB message (C memory)", "./go/internal/rawbatch/",
     "BenchmarkAppend1KB$", 1),
    ("wire: decode a StreamingPullResponse of 1000 x 1 KiB", "./go/internal/wire/", "BenchmarkParse1KB$", 1000),
    ("subscriber: decode + append (as a stream does) + Next + Release, 1000 x 1 KiB", "./go/internal/subscriber/",
     "BenchmarkNext$", 1000),
]


def run(build: Build, plan: Plan) -> dict:
    out: dict = {"peer": [], "go": []}
    for size in plan.handoff_sizes:
        server = LoadServer(build, size)
        try:
            subs = [f"projects/bench/subscriptions/handoff-{r}" for r in range(plan.reps)]
            create(build, server, "projects/bench/topics/handoff", subs)
            for rep, sub in enumerate(subs):
                cmd = py("pghandoff.py", "--emulator-host", server.host, "--subscription", sub,
                         "--calls", str(plan.handoff_calls))
                d = run_peer(cmd, build.env(), timeout=600).data
                d.update(payload=size, rep=rep, command=" ".join(cmd))
                out["peer"].append(d)
                nb = d["next_batch"]
                say(f"4/5 hand-off {size} B run {rep + 1}: next_batch p50/p99 "
                    + ", ".join(f"{k} rows {v['p50_us']:.0f}/{v['p99_us']:.0f} µs" for k, v in nb.items()))
        finally:
            server.stop()
    for what, pkg, pattern, rows in GO_BENCHES:
        cmd = ["go", "test", "-run", "XXX", "-bench", pattern, "-benchtime", "1s", "-count", str(plan.reps), pkg]
        try:
            r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            out["go"].append({"what": what, "command": " ".join(cmd), "error": "timed out"})
            continue
        ns = [float(m) for m in re.findall(r"\s([\d.]+) ns/op", r.stdout)]
        entry = {"what": what, "command": " ".join(cmd), "ns_per_op": ns, "rows_per_op": rows}
        if not ns:
            entry["error"] = (r.stdout + r.stderr).strip().splitlines()[-3:]
        out["go"].append(entry)
        say(f"4/5 go bench {what}: {ns or entry.get('error')}")
    return out
