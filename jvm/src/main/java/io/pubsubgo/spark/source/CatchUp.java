package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.CBatch;
import io.pubsubgo.spark.bridge.Subscriber;
import org.apache.spark.sql.vectorized.ColumnVector;

/**
 * Catching up (catchUpStreamsPerPartition), a streaming task's side of it,
 * as the Python source's task/pull.py and run.py: the subscriber grows to
 * its catch_up_streams once what arrives is older than the library's
 * catch_up_lag_ms (go/internal/subscriber/catchup.go); this decides when the
 * task reads on past a pause and when its grown subscriber is closed.
 *
 * <p>A streaming task whose newest row was published more than the lag ago
 * is reading a backlog, not live traffic: ending its micro-batch at the
 * first wait that runs out would buy those rows no latency (they are late
 * already) and cost a micro-batch per burst of a server that sends a
 * backlog in bursts (Google's emulator pauses longer than maxWaitTimeMs
 * between them). Such a task reads on through pauses of up to GAP_MS,
 * within its time budget and caps. Live traffic stays well under the lag,
 * so those tasks still end at the first wait that runs out. The lag is
 * measured against this machine's clock: one far ahead of Pub/Sub's costs
 * up to GAP_MS of latency per task, never a row.
 *
 * <p>Once a task with a grown subscriber hands over fresh rows it is caught
 * up, and the extra streams cost live traffic latency: the subscriber is
 * closed (its prefetch nacked) rather than kept, and the next task opens
 * one with streamsPerPartition.
 */
final class CatchUp {
  /** The library's catch_up_lag_ms, from the contract (its default: the source sets no other). */
  static final long LAG_MS = OptionTable.contractDefault("subscriber_config.catch_up_lag_ms");
  /** The longest pause a catching-up task reads on through, from the contract (both front ends read it). */
  static final long GAP_MS = OptionTable.contractLimit("source_task_limits", "catch_up_gap_ms");

  private final int streamsPerPartition;
  private long newestUs; // publish time of the newest row of the last take that had rows; 0: none
  private long lastRowsAtMs; // when a take last had rows

  CatchUp(int streamsPerPartition) {
    this.streamsPerPartition = streamsPerPartition;
  }

  /** A take handed out rows: their newest publish time (microseconds since the epoch). */
  void took(CBatch b) {
    lastRowsAtMs = System.currentTimeMillis();
    ColumnVector t = b.column(b.schema().fieldIndex("publish_time"));
    long newest = 0;
    for (int i = 0, n = b.allRows(); i < n; i++) {
      if (!t.isNullAt(i)) {
        newest = Math.max(newest, t.getLong(i));
      }
    }
    if (newest > 0) {
      newestUs = newest;
    }
  }

  /**
   * The task's rows are old and the pause since its last ones is short,
   * with its subscriber able to receive (flow control open, streams live:
   * otherwise nothing more can come, so it hands over).
   */
  boolean catchingUp(long[] stats) {
    if (newestUs == 0 || stats[Subscriber.stat("blocked_ms")] > 0) {
      return false;
    }
    long now = System.currentTimeMillis();
    if (now - lastRowsAtMs >= GAP_MS) {
      return false;
    }
    return now * 1000 - newestUs > LAG_MS * 1000;
  }

  /**
   * The task's newest row is well inside the lag (half of it: a lag
   * hovering near the line does not flip a subscriber between growing and
   * being replaced at every task).
   */
  boolean fresh() {
    return newestUs > 0 && System.currentTimeMillis() * 1000 - newestUs < LAG_MS * 1000 / 2;
  }

  /** The subscriber opened catching-up streams beyond streamsPerPartition. */
  boolean grown(long[] stats) {
    return stats[Subscriber.stat("streams")] > streamsPerPartition;
  }
}
