"""Section 3, writing 1 KB messages to the load server (which counts
publishes): pubsub-go's Spark sink (writeStream from the in-memory Arrow
source), that source into a Python Arrow writer that drops its input (the
fair ceiling: Spark's Python writer path, which the sink cannot avoid) and
into noop (Spark alone),
pubsub_go's Publisher without Spark, Google's Python publisher and
Google's Go publisher."""

from __future__ import annotations

from .log import say
from .plan import Plan
from .procs import Build, LoadServer, create, py, run_peer
from .sparkrun import measure

SIZE = 1024
TOPIC = "projects/bench/topics/write"
CLIENTS = ("spark-sink", "spark-fair-ceiling", "spark-ceiling", "pubsub-go-publisher", "google-python", "google-go")


def _source(spark):
    return (spark.readStream.format("bench-arrow").option("schema", "publish").option("numPartitions", "2")
            .option("rowsPerPartition", "100000").option("payloadBytes", str(SIZE)).load())


def _peer(client: str, build: Build, host: str, plan: Plan) -> list[str]:
    if client == "pubsub-go-publisher":
        return py("pgpublish.py", "--emulator-host", host, "--topic", TOPIC,
                  "--messages", str(plan.fast_publish_messages), "--size", str(SIZE))
    if client == "google-python":
        return py("pypublish.py", "--emulator-host", host, "--topic", TOPIC,
                  "--messages", str(plan.py_publish_messages), "--size", str(SIZE))
    return [str(build.gopublish), "--topic", TOPIC, "--messages", str(plan.fast_publish_messages),
            "--size", str(SIZE)]


def run(spark, build: Build, plan: Plan, scratch: str) -> list[dict]:
    rows: list[dict] = []
    total = plan.reps * len(CLIENTS)
    server = LoadServer(build, SIZE)
    try:
        create(build, server, TOPIC, [])
        env = {**build.env(), "PUBSUB_EMULATOR_HOST": server.host}
        for rep in range(plan.reps):
            for client in CLIENTS:
                before = server.stats()["published"]
                try:
                    if client == "spark-sink":
                        m = measure(_source(spark), scratch, plan.spark_warmup, plan.spark_window, sink="pubsub-go",
                                    sink_options={"topicId": TOPIC, "emulatorHost": server.host})
                        row = {"msgs_per_sec": m["rows_per_sec"], "messages": m["rows"], "seconds": m["seconds"],
                               "peak_python_rss_mb": m["peak_python_rss_mb"]}
                    elif client in ("spark-ceiling", "spark-fair-ceiling"):
                        sink = "bench-discard" if client == "spark-fair-ceiling" else "noop"
                        m = measure(_source(spark), scratch, plan.spark_warmup, plan.spark_window, sink=sink)
                        row = {"msgs_per_sec": m["rows_per_sec"], "messages": m["rows"], "seconds": m["seconds"]}
                    else:
                        cmd = _peer(client, build, server.host, plan)
                        res = run_peer(cmd, env, timeout=600)
                        d = res.data
                        row = {"msgs_per_sec": d["msgs_per_sec"], "messages": d["messages"], "seconds": d["seconds"],
                               "cores": d["cpu_seconds"] / d["seconds"], "max_rss_mb": res.max_rss_mb,
                               "command": " ".join(cmd)}
                        row["per_core"] = d["msgs_per_sec"] / row["cores"] if row["cores"] else None
                except Exception as e:
                    say(f"3/5 write {client} run {rep + 1} FAILED: {e}")
                    rows.append({"client": client, "rep": rep, "error": str(e)[:500]})
                    continue
                row.update(client=client, rep=rep, server_published=server.stats()["published"] - before)
                rows.append(row)
                extra = f", {row['cores']:.2f} cores" if "cores" in row else ""
                say(f"3/5 write [{len(rows)}/{total}] {client} run {rep + 1}: {row['msgs_per_sec']:,.0f} msg/s{extra}")
    finally:
        server.stop()
    return rows
