"""A streaming job for the hard-stop test: pubsub-go -> parquet file sink.
Run as its own process (the whole driver), killed and restarted by the test.
Args: emulator_host subscription out_dir checkpoint_dir batch_log run_seconds"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from sparkutil import spark_session  # noqa: E402

host, sub, out, ckpt, batch_log, run_seconds = sys.argv[1:7]
spark = spark_session(app="hard-stop")
df = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
      .option("numPartitions", "2").option("maxRecordsPerTrigger", "150").option("maxWaitTimeMs", "300")
      # The test SIGKILLs this process group between batches. A subscriber kept
      # for the next task would die with open streams, and Google's emulator
      # keeps a killed stream's messages leased to nobody (docs/source.md, End
      # of backlog); real Pub/Sub redelivers them after ackDeadlineSeconds.
      .option("subscriberIdleMs", "0")
      .option("batchLogLocation", batch_log).load())
q = (df.selectExpr("message_id", "CAST(payload AS STRING) AS payload").writeStream.format("parquet")
     .option("path", out).option("checkpointLocation", ckpt).trigger(processingTime="500 milliseconds").start())
deadline = time.monotonic() + float(run_seconds)
while time.monotonic() < deadline and q.isActive:
    p = q.lastProgress
    if p:
        print(f"progress batch={p['batchId']} rows={p['numInputRows']}", flush=True)
    time.sleep(1)
if q.exception():
    print(f"query failed: {q.exception()}", flush=True)
    sys.exit(2)
q.stop()
spark.stop()
print("clean exit", flush=True)
