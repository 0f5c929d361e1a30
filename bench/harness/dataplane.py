"""Section 1, the data plane without Spark: pubsub_go's Subscriber (into
pyarrow batches, acking), Google's Python streaming subscriber and Google's
Go Receive, each in its own process against the same load server, per
payload size."""

from __future__ import annotations

from .log import say
from .plan import Plan
from .procs import Build, LoadServer, create, py, run_peer

CLIENTS = ("pubsub-go", "google-python", "google-go")
MAX_OUTSTANDING = 10_000
MAX_OUTSTANDING_BYTES = 1_000_000_000  # Google's Go client default, used for all three


def command(client: str, build: Build, host: str, sub: str, plan: Plan) -> list[str]:
    if client == "pubsub-go":
        return py("pgreceive.py", "--emulator-host", host, "--subscription", sub,
                  "--warmup", str(plan.dp_warmup), "--duration", str(plan.dp_duration),
                  "--max-outstanding", str(MAX_OUTSTANDING), "--max-outstanding-bytes", str(MAX_OUTSTANDING_BYTES))
    if client == "google-python":
        return py("pyreceive.py", "--emulator-host", host, "--subscription", sub,
                  "--warmup", str(plan.dp_warmup), "--duration", str(plan.dp_duration),
                  "--max-outstanding", str(MAX_OUTSTANDING), "--max-outstanding-bytes", str(MAX_OUTSTANDING_BYTES))
    return [str(build.goreceive), "--subscription", sub, "--duration", f"{plan.dp_duration}s",
            "--warmup", f"{plan.dp_warmup}s", "--max-outstanding", str(MAX_OUTSTANDING)]


def run(build: Build, plan: Plan) -> list[dict]:
    rows: list[dict] = []
    total = len(plan.sizes) * plan.reps * len(CLIENTS)
    for size in plan.sizes:
        server = LoadServer(build, size)
        try:
            subs = {(c, r): f"projects/bench/subscriptions/dp-{c}-{r}" for c in CLIENTS for r in range(plan.reps)}
            create(build, server, "projects/bench/topics/dp", list(subs.values()))
            env = {**build.env(), "PUBSUB_EMULATOR_HOST": server.host}
            for rep in range(plan.reps):
                for client in CLIENTS:  # interleaved, so drifting machine load hits all alike
                    cmd = command(client, build, server.host, subs[(client, rep)], plan)
                    res = run_peer(cmd, env, timeout=plan.dp_warmup + plan.dp_duration + 90)
                    d = res.data
                    cores = d["cpu_seconds"] / d["seconds"]
                    row = {"client": client, "payload": size, "rep": rep, "msgs_per_sec": d["msgs_per_sec"],
                           "mb_per_sec": d["bytes"] / d["seconds"] / 1e6, "cores": cores,
                           "per_core": d["msgs_per_sec"] / cores if cores > 0 else None,
                           "max_rss_mb": res.max_rss_mb, "command": " ".join(cmd)}
                    rows.append(row)
                    say(f"1/5 data plane [{len(rows)}/{total}] {size} B {client} run {rep + 1}: "
                        f"{row['msgs_per_sec']:,.0f} msg/s, {cores:.2f} cores, "
                        f"{row['mb_per_sec']:.0f} MB/s, peak RSS {res.max_rss_mb:.0f} MB")
        finally:
            server.stop()
    return rows
