"""A streaming job for the hard-stop tests: pubsub-go -> parquet file sink.
Run as its own process (the whole driver), killed and restarted by a test.
Args: emulator_host subscription out_dir checkpoint_dir batch_log run_seconds
[--pooled] [--trigger-seconds S] [--ack-deadline S] [--stop-file PATH]

It prints "between batch=N rows=R next_trigger_ms=T" as each micro-batch
ends (a query listener); T is when (epoch ms) the next trigger starts.
Two tests use it:
- tests/test_source.py, against Google's emulator, kills it between
  micro-batches (a 2 s trigger leaves the gap; no pooled subscriber): the
  emulator keeps a StreamingPull stream that was cut without a half-close
  leasing messages to nobody until it restarts (docs/source.md), so a kill
  during a task would hide the rest of the backlog from every later run.
- tests/test_driver_kill.py, against bench/loadserver (which expires a dead
  stream's leases as Pub/Sub does), kills it during tasks, with the pooled
  subscriber's prefetch alive (--pooled, trigger 0).
It stops cleanly when run_seconds pass or the stop file appears."""

import argparse
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pyspark.sql.streaming import StreamingQueryListener  # noqa: E402

from sparkutil import spark_session  # noqa: E402


class BatchEnds(StreamingQueryListener):
    def __init__(self, trigger_ms: int) -> None:
        self.trigger_ms = trigger_ms

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        p = event.progress
        print(f"between batch={p.batchId} rows={p.numInputRows} next_trigger_ms={self._next_trigger_ms(p)}",
              flush=True)

    def _next_trigger_ms(self, p) -> int:
        """Spark's processing-time trigger starts at the next multiple of the
        interval after the last trigger's start, or at once if the batch ran
        past it (ProcessingTimeExecutor). The progress's timestamp is taken
        a moment after the trigger's start, which is a multiple itself but
        for the first trigger and one after a batch that overran."""
        start = int(datetime.datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp() * 1000)
        end = start + int(p.durationMs.get("triggerExecution", 0))
        if not self.trigger_ms:  # processingTime 0: the next batch starts at once
            return end
        return max(start - start % self.trigger_ms + self.trigger_ms, end)

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass


ap = argparse.ArgumentParser()
for name in ("host", "sub", "out", "ckpt", "batch_log"):
    ap.add_argument(name)
ap.add_argument("run_seconds", type=float)
ap.add_argument("--pooled", action="store_true", help="keep the default subscriberIdleMs (else 0)")
ap.add_argument("--trigger-seconds", type=float, default=2.0)
ap.add_argument("--ack-deadline", type=int, default=0, help="ackDeadlineSeconds (0: the default)")
ap.add_argument("--stop-file", default="")
a = ap.parse_args()

spark = spark_session(app="hard-stop")
spark.streams.addListener(BatchEnds(int(a.trigger_seconds * 1000)))
r = (spark.readStream.format("pubsub-go").option("subscriptionId", a.sub).option("emulatorHost", a.host)
     .option("numPartitions", "2").option("maxRecordsPerTrigger", "150").option("maxWaitTimeMs", "300")
     .option("batchLogLocation", a.batch_log))
if not a.pooled:
    # A subscriber kept for the next task would die with open streams, and
    # Google's emulator keeps a killed stream's messages leased to nobody
    # (docs/source.md, End of backlog); real Pub/Sub redelivers them after
    # ackDeadlineSeconds.
    r = r.option("subscriberIdleMs", "0")
if a.ack_deadline:
    r = r.option("ackDeadlineSeconds", str(a.ack_deadline))
q = (r.load().selectExpr("message_id", "CAST(payload AS STRING) AS payload", "delivery_attempt")
     .writeStream.format("parquet").option("path", a.out).option("checkpointLocation", a.ckpt)
     .trigger(processingTime=f"{a.trigger_seconds} seconds").start())
deadline = time.monotonic() + a.run_seconds
while time.monotonic() < deadline and q.isActive and not (a.stop_file and os.path.exists(a.stop_file)):
    time.sleep(0.2)
if q.exception():
    print(f"query failed: {q.exception()}", flush=True)
    sys.exit(2)
q.stop()
spark.stop()
print("clean exit", flush=True)
