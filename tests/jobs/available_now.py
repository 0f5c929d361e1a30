"""An AvailableNow run of pubsub-go into a parquet file sink, as its own
process (its own driver and JVM, so the faults a test arms, tests/faults/,
reach every Python worker): a daily job's run. Restarting it with the same checkpoint is the
next day's run.
Args: emulator_host subscription out_dir checkpoint_dir batch_log [options_json]
Prints the last progress as JSON; exits 2 if the query failed."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from sparkutil import spark_session  # noqa: E402

host, sub, out, ckpt, batch_log = sys.argv[1:6]
extra = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
spark = spark_session(app="available-now")
r = (spark.readStream.format("pubsub-go").option("subscriptionId", sub).option("emulatorHost", host)
     .option("batchLogLocation", batch_log))
for k, v in extra.items():
    r = r.option(k, str(v))
q = (r.load().selectExpr("message_id", "CAST(payload AS STRING) AS payload").writeStream.format("parquet")
     .option("path", out).option("checkpointLocation", ckpt).trigger(availableNow=True).start())
finished = q.awaitTermination(600)
err = q.exception()
print(f"LAST_PROGRESS {q.lastProgress}", flush=True)
if not finished:
    q.stop()
    print("query did not end within 600 s", flush=True)
    sys.exit(3)
if err is not None:
    print(f"query failed: {err}", flush=True)
    sys.exit(2)
spark.stop()
print("clean exit", flush=True)
