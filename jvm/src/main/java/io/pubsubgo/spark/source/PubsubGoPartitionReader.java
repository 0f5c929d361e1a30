package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.CBatch;
import io.pubsubgo.spark.bridge.Subscriber;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * One task: pulls up to its row cap from Pub/Sub into Arrow batches in C
 * memory and hands each to Spark as it comes, recording it in the batch
 * log; or, when the log has this task's entry (a re-run), replays it.
 * At the end it publishes the entry, then leases what it handed out to
 * the driver (commitLeaseSeconds), which acks it when Spark commits.
 */
final class PubsubGoPartitionReader implements PartitionReader<ColumnarBatch> {
  private final PubsubGoPartition part;
  private final BatchLog log;
  private final long started = System.currentTimeMillis();

  private Subscriber sub;
  private BatchLog.Writer writer;
  private final ByteArrayOutputStream acks = new ByteArrayOutputStream();
  private ArrayDeque<byte[]> replay; // the entry's batches, on a re-run
  private CBatch current;
  private long rows;
  private boolean drained;
  private boolean done;
  private long[] stats;
  private final SchemaMode.Reader decode; // schema mode; null: raw mode
  private final AttributeColumns.Appender derived; // raw mode's attribute columns; null: none
  private final int attributesOrdinal;

  PubsubGoPartitionReader(PubsubGoPartition part) {
    this.part = part;
    this.log = new BatchLog(part.logDir, part.hadoopConf.get());
    this.decode = part.schemaMode == null ? null : part.schemaMode.reader();
    this.derived = part.derived == null ? null : part.derived.new Appender();
    this.attributesOrdinal = java.util.Arrays.asList(io.pubsubgo.spark.bridge.Library.rawSchema().fieldNames())
        .indexOf("attributes");
    try {
      Path entry = log.entry(part.batch, part.index);
      if (log.exists(entry)) {
        replay = new ArrayDeque<>();
        log.read(entry, false, (kind, b) -> {
          if (kind == BatchLog.BATCH) {
            replay.add(b);
          }
        });
      } else {
        sub = SubscriberPool.take(part.subscriberConfig);
        try {
          writer = log.new Writer(part.batch, part.index);
        } catch (IOException | RuntimeException e) {
          // Spark closes only a reader it got: a subscriber left open here
          // (a task cancelled while creating its entry, say) would go on
          // pulling and extending leases for nobody.
          SubscriberPool.discard(sub);
          sub = null;
          throw e;
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("pubsub-go: batch log " + part.logDir + ": " + e.getMessage(), e);
    }
  }

  @Override
  public boolean next() throws IOException {
    closeCurrent();
    if (replay != null) {
      byte[] b = replay.poll();
      if (b == null) {
        return false;
      }
      current = Subscriber.importIpc(b, 0, b.length);
      if (decode != null) {
        decode.replay(current);
      }
      rows += current.numRows();
      return true;
    }
    while (!done) {
      long left = part.maxRows - rows;
      if (left <= 0) {
        finish();
        break;
      }
      long elapsed = System.currentTimeMillis() - started;
      long budget = part.maxDurationMs - elapsed;
      if (budget <= 0) {
        finish();
        break;
      }
      long n = Math.min(left, part.batchSize);
      long wait = Math.min(part.waitMs, budget);
      Subscriber.Take t = decode == null ? sub.take(n, wait, true) : decode.take(sub, n, wait);
      if (t.batch.numRows() > 0) {
        try {
          writer.chunk(BatchLog.BATCH, t.log);
        } finally {
          t.log.close();
        }
        writer.chunk(BatchLog.ACKS, t.ackLines);
        acks.write(t.ackLines, 0, t.ackLines.length);
        rows += t.batch.numRows();
        current = t.batch;
        return true;
      }
      t.batch.close();
      t.log.close();
      if (rows > 0 && t.waitedOut && !part.untilQuiet) {
        finish(); // streaming: a task with rows ends when a wait runs out
      } else if (quietFor() >= part.quietMs) {
        drained = true;
        finish();
      }
    }
    return false;
  }

  private long quietFor() {
    return sub.stats()[Subscriber.stat("quiet_ms")];
  }

  /**
   * Hands the leases to the driver, then publishes the entry. In this order
   * a crash between the two leaves messages leased for commitLeaseSeconds
   * with no entry naming them (redelivered after that lease, never
   * duplicated); the other order would leave an entry whose messages keep
   * only their short lease, so a replay and their redelivery would both
   * deliver them.
   */
  private void finish() throws IOException {
    done = true;
    stats = sub.stats();
    writer.chunk(BatchLog.SUMMARY, summary().getBytes(StandardCharsets.UTF_8));
    byte[] ids = acks.toByteArray();
    sub.ackIds(Subscriber.MODACK, ids, 0, ids.length, part.commitLeaseSeconds);
    sub.ackIds(Subscriber.RELEASE, ids, 0, ids.length, 0);
    if (!writer.publish()) {
      sub.ackIds(Subscriber.NACK, ids, 0, ids.length, 0);
      throw new IllegalStateException("pubsub-go: another attempt of batch " + part.batch + " partition "
          + part.index + " published its batch-log entry first; this attempt's rows are given back");
    }
    writer = null;
    acks.reset();
  }

  private String summary() {
    StringBuilder s = new StringBuilder("{\"rows\":").append(rows).append(",\"drained\":").append(drained);
    if (decode != null) {
      s.append(",\"deadLettered\":").append(decode.deadLettered);
    }
    if (derived != null) {
      s.append(",\"eventTimeErrors\":").append(derived.eventTimeErrors);
    }
    for (int i = 0; i < Subscriber.STAT_NAMES.length; i++) {
      s.append(",\"").append(Subscriber.STAT_NAMES[i]).append("\":").append(stats[i]);
    }
    return s.append('}').toString();
  }

  @Override
  public ColumnarBatch get() {
    return derived == null ? current.columnar() : derived.add(current.columnar(), attributesOrdinal);
  }

  private void closeCurrent() {
    if (current != null) {
      current.close();
      current = null;
    }
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    return SourceMetrics.taskValues(rows, sub == null ? null : sub.stats());
  }

  @Override
  public void close() throws IOException {
    closeCurrent();
    if (decode != null) {
      decode.close();
    }
    if (derived != null) {
      derived.close();
    }
    if (writer != null) { // failed or cancelled before publishing: give the rows back now
      writer.close();
      byte[] ids = acks.toByteArray();
      try {
        if (sub != null && ids.length > 0) {
          sub.ackIds(Subscriber.NACK, ids, 0, ids.length, 0);
        }
      } finally {
        writer = null;
        SubscriberPool.discard(sub);
        sub = null;
      }
    }
    if (sub != null) {
      if (part.untilQuiet) {
        // AvailableNow: a kept subscriber would take messages published
        // after the run's cut-off and sit on them (released, not nacked)
        // while the next run reads; closed, it nacks its prefetch.
        SubscriberPool.discard(sub);
      } else {
        SubscriberPool.giveBack(part.subscriberConfig, sub);
      }
      sub = null;
    }
  }
}
