"""Two (or more) builds of libpubsubgo side by side on the data plane: the
pubsub-go Subscriber (bench/peers/pgreceive.py, as in section 1) or, with
--publish, the Publisher (bench/peers/pgpublish.py, as in section 3)
against one load server, each library in turn per round (the order reversed every
other round, so drifting machine load hits all alike). Prints msgs/s,
cores and msgs/s per core per run, then the medians and the per-round
ratios to the first library. For a change to the Go receive path this is
the figure that moves clearly; a Spark run adds the JVM's noise.

    python bench/tools/dataplane_ab.py --lib OLD.so --lib NEW.so [--rounds 4] [--payload 1024]
                                 [--publish [--messages 1000000]]

Build a library of a tree with
    go build -buildmode=c-shared -trimpath -ldflags='-s -w' -o /tmp/lib.so ./go/capi
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH / "peers"), str(BENCH.parent / "python")]

from harness.dataplane import MAX_OUTSTANDING, MAX_OUTSTANDING_BYTES  # noqa: E402
from harness.procs import Build, LoadServer, create, py, run_peer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", action="append", required=True, help="a libpubsubgo.so (repeat: 2 or more)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--payload", type=int, default=1024, help="payload bytes (default 1024)")
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--publish", action="store_true", help="measure the Publisher instead of the Subscriber")
    ap.add_argument("--messages", type=int, default=1_000_000, help="with --publish: messages per run")
    a = ap.parse_args()
    if len(a.lib) < 2:
        ap.error("give --lib at least twice")

    build = Build.make(a.lib[0])
    server = LoadServer(build, a.payload)
    runs: dict[str, list[tuple[float, float]]] = {lib: [] for lib in a.lib}
    try:
        subs = {(i, r): f"projects/bench/subscriptions/ab-{i}-{r}" for i in range(len(a.lib)) for r in range(a.rounds)}
        create(build, server, "projects/bench/topics/ab", [] if a.publish else list(subs.values()))
        for r in range(a.rounds):
            order = list(enumerate(a.lib))
            for i, lib in order if r % 2 == 0 else order[::-1]:
                env = {**build.env(), "PUBSUB_EMULATOR_HOST": server.host, "PUBSUB_GO_LIBRARY": lib}
                if a.publish:
                    cmd = py("pgpublish.py", "--emulator-host", server.host, "--topic", "projects/bench/topics/ab",
                             "--messages", str(a.messages), "--size", str(a.payload))
                else:
                    cmd = py("pgreceive.py", "--emulator-host", server.host, "--subscription", subs[(i, r)],
                             "--warmup", str(a.warmup), "--duration", str(a.duration),
                             "--max-outstanding", str(MAX_OUTSTANDING),
                             "--max-outstanding-bytes", str(MAX_OUTSTANDING_BYTES))
                d = run_peer(cmd, env, timeout=a.warmup + a.duration + 90).data
                cores = d["cpu_seconds"] / d["seconds"]
                runs[lib].append((d["msgs_per_sec"], d["msgs_per_sec"] / cores))
                print(f"round {r + 1}/{a.rounds} {lib}: {d['msgs_per_sec']:,.0f} msg/s, {cores:.2f} cores, "
                      f"{d['msgs_per_sec'] / cores:,.0f} msg/s per core", flush=True)
    finally:
        server.stop()
    first = runs[a.lib[0]]
    for lib in a.lib:
        per_core = [pc for _, pc in runs[lib]]
        ratios = [pc / first[r][1] for r, (_, pc) in enumerate(runs[lib])]
        print(f"{lib}: median {statistics.median(m for m, _ in runs[lib]):,.0f} msg/s, "
              f"{statistics.median(per_core):,.0f} msg/s per core; per core / first library per round: "
              + ", ".join(f"{x:.2f}" for x in ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
