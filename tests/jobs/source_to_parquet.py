"""A streaming job for the hard-stop test: pubsub-go -> parquet file sink.
Run as its own process (the whole driver), killed and restarted by the test.
Args: emulator_host subscription out_dir checkpoint_dir batch_log run_seconds

It prints "between batch=N rows=R" as each micro-batch ends (a query
listener), and the trigger leaves ~1.5 s between micro-batches, so the test
can kill it while no task runs: Google's emulator keeps a StreamingPull
stream that was cut without a half-close leasing messages to nobody until
it restarts (docs/source.md), so a kill during a task hides the rest of
the backlog from every later run. A process killed with its streams open
is tested against bench/loadserver, which expires a dead stream's leases
as Pub/Sub does (tests/test_executor_kill.py: a worker with a pooled
subscriber); a driver killed during a task is not tested anywhere yet."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pyspark.sql.streaming import StreamingQueryListener  # noqa: E402

from sparkutil import spark_session  # noqa: E402


class BatchEnds(StreamingQueryListener):
    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        print(f"between batch={event.progress.batchId} rows={event.progress.numInputRows}", flush=True)

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass


host, sub, out, ckpt, batch_log, run_seconds = sys.argv[1:7]
spark = spark_session(app="hard-stop")
spark.streams.addListener(BatchEnds())
df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
      .option("numPartitions", "2").option("maxRecordsPerTrigger", "150").option("maxWaitTimeMs", "300")
      # The test SIGKILLs this process group between batches. A subscriber kept
      # for the next task would die with open streams, and Google's emulator
      # keeps a killed stream's messages leased to nobody (docs/source.md, End
      # of backlog); real Pub/Sub redelivers them after ackDeadlineSeconds.
      .option("subscriberIdleMs", "0")
      .option("batchLogLocation", batch_log).load())
q = (df.selectExpr("message_id", "CAST(payload AS STRING) AS payload").writeStream.format("parquet")
     .option("path", out).option("checkpointLocation", ckpt).trigger(processingTime="2 seconds").start())
deadline = time.monotonic() + float(run_seconds)
while time.monotonic() < deadline and q.isActive:
    time.sleep(0.5)
if q.exception():
    print(f"query failed: {q.exception()}", flush=True)
    sys.exit(2)
q.stop()
spark.stop()
print("clean exit", flush=True)
