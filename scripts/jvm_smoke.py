"""A write and a read through the JVM front end, as an installed user does them
(scripts/packaging-check.sh runs it in fresh venvs with no Go, Maven or
compiler on PATH): the package's embedded emulator, N rows written with
`df.write.format("pubsub-go")`, then read back with an AvailableNow query,
every payload once, through the jar (its progress names the JVM source).

  python scripts/jvm_smoke.py configure            # pubsub_go.configure_spark(builder)
  python scripts/jvm_smoke.py maven COORDS REPO    # spark.jars.packages from a Maven-layout repository
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time

N = 500
PROJECT = "pubsub-go-smoke"


def builder(mode: list[str], work: str):
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master("local[2]").appName("pubsub-go-jvm-smoke").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2"))
    if mode[0] == "configure":
        import pubsub_go

        return pubsub_go.configure_spark(b)
    coords, repo = mode[1], mode[2]
    return (b.config("spark.jars.packages", coords).config("spark.jars.repositories", f"file://{repo}")
            .config("spark.jars.ivy", f"{work}/ivy"))  # a cache of its own: resolved from the repository


def main(mode: list[str]) -> int:
    from pubsub_go import Emulator, admin

    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="pubsub-go-jvm-smoke-")
    topic, sub = f"projects/{PROJECT}/topics/t", f"projects/{PROJECT}/subscriptions/s"
    with Emulator() as emu:
        host = emu.host_port
        admin("create_topic", emulator_host=host, topic=topic)
        admin("create_subscription", emulator_host=host, topic=topic, subscription=sub, ack_deadline_seconds=60)
        spark = builder(mode, work).getOrCreate()
        try:
            jars = spark.sparkContext.getConf().get("spark.jars", "")
            (spark.range(N).selectExpr("CAST(concat('m', id) AS BINARY) AS payload").write.format("pubsub-go")
             .mode("append").option("topicId", topic).option("emulatorHost", host).save())
            q = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
                 .load().writeStream.format("parquet").option("path", f"{work}/out")
                 .option("checkpointLocation", f"{work}/ck").trigger(availableNow=True).start())
            q.awaitTermination(300)
            if q.exception() is not None:
                raise RuntimeError(str(q.exception()))
            source = q.lastProgress["sources"][0]["description"]
            got = sorted(bytes(r.payload).decode() for r in spark.read.parquet(f"{work}/out").collect())
            version = spark.version
        finally:
            spark.stop()
            shutil.rmtree(work, ignore_errors=True)
    want = sorted(f"m{i}" for i in range(N))
    if got != want or not source.startswith("pubsub-go["):
        print(f"jvm smoke FAILED: {len(got)} rows read of {N} written; source {source!r}; spark.jars {jars}",
              file=sys.stderr)
        return 1
    print(f"   jvm smoke ({mode[0]}): Spark {version}, {N} rows written and read back through the jar "
          f"({source.split('[')[0]}, from {jars.split(',')[-1]}) in {time.monotonic() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["configure"]))
