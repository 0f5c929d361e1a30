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
 * At the end it leases what it handed out to the driver
 * (commitLeaseSeconds), which acks it when Spark commits, then publishes
 * the entry; without ackOnCommit it publishes the entry, then acks.
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
  private long bytes; // the rows' Arrow IPC bytes, as the batch log holds them
  private boolean drained;
  private boolean live; // streaming: ended handing over fresh rows at a pause (CatchUp.fresh)
  private final CatchUp catchUp;
  private IdWindow.Filter idFilter; // idAttribute; null: none
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
    this.catchUp = new CatchUp(part.streamsPerPartition);
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
        if (part.idWindow != null) {
          idFilter = part.idWindow.filter(log.fs(), log.dir());
        }
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
      org.apache.spark.TaskContext tc = org.apache.spark.TaskContext.get();
      if (tc != null) {
        // A stopped query's task, which may be waiting for its minimum up
        // to maxTriggerDelay: ended now, its rows given back by close().
        tc.killTaskIfInterrupted();
      }
      long left = part.maxRows - rows;
      boolean full = part.maxBytes != PubsubGoOffset.NO_LIMIT && bytes >= part.maxBytes;
      if (left <= 0 || full) {
        finish();
        break;
      }
      long now = System.currentTimeMillis();
      // min...PerTrigger: the task may wait past its budget for its minimum, up to maxTriggerDelay.
      long budget = Math.max(started + part.maxDurationMs, waitingForMinimum(now) ? part.waitUntilMs : 0) - now;
      if (budget <= 0) {
        finish();
        break;
      }
      long n = Math.min(left, part.batchSize);
      if (part.maxBytes != PubsubGoOffset.NO_LIMIT) {
        // The byte cap's share: not overshot by a whole pull. The first pull
        // takes one row, whose size sizes the next (bytes per row so far).
        n = rows == 0 ? 1 : Math.min(n, Math.max(1, (part.maxBytes - bytes) / Math.max(1, bytes / rows)));
      }
      long wait = Math.min(part.waitMs, budget);
      Subscriber.Take t;
      if (decode != null) {
        t = decode.take(sub, n, wait, idFilter);
      } else {
        t = sub.take(n, wait, true);
        if (idFilter != null) {
          t = idFilter.apply(sub, t);
        }
      }
      if (t.batch.numRows() > 0) {
        try {
          writer.chunk(BatchLog.BATCH, t.log);
        } finally {
          t.log.close();
        }
        writer.chunk(BatchLog.ACKS, t.ackLines);
        acks.write(t.ackLines, 0, t.ackLines.length);
        bytes += t.log.length;
        rows += t.batch.numRows();
        catchUp.took(t.batch);
        current = t.batch;
        return true;
      }
      t.batch.close();
      t.log.close();
      boolean waiting = waitingForMinimum(System.currentTimeMillis());
      if (rows > 0 && t.waitedOut && !part.untilQuiet && !waiting && !catchUp.catchingUp(sub.stats())) {
        // Streaming: a task with rows ends when a wait runs out (latency), unless it is catching up.
        live = catchUp.fresh();
        finish();
      } else if (quietFor() >= part.quietMs && !waiting) {
        drained = true;
        finish();
      }
    }
    return false;
  }

  /** Still waiting for its share of minRecordsPerTrigger or minBytesPerTrigger (until waitUntilMs). */
  private boolean waitingForMinimum(long now) {
    if (part.waitUntilMs == 0 || now >= part.waitUntilMs) {
      return false;
    }
    return (part.minRows != PubsubGoOffset.NO_LIMIT && rows < part.minRows)
        || (part.minBytes != PubsubGoOffset.NO_LIMIT && bytes < part.minBytes);
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
   * deliver them. Without ackOnCommit the entry comes first, then the ack:
   * the rows are acked only once a replay would see them.
   */
  private void finish() throws IOException {
    done = true;
    stats = sub.stats();
    writer.chunk(BatchLog.SUMMARY, summary().getBytes(StandardCharsets.UTF_8));
    byte[] ids = acks.toByteArray();
    if (part.ackOnCommit) {
      sub.ackIds(Subscriber.MODACK, ids, 0, ids.length, part.commitLeaseSeconds);
      sub.ackIds(Subscriber.RELEASE, ids, 0, ids.length, 0);
    }
    if (!writer.publish()) {
      sub.ackIds(Subscriber.NACK, ids, 0, ids.length, 0);
      throw new IllegalStateException("pubsub-go: another attempt of batch " + part.batch + " partition "
          + part.index + " published its batch-log entry first; this attempt's rows are given back");
    }
    if (idFilter != null) {
      idFilter.record(part.batch, part.index); // the entry's rows are delivered now: their ids join the window
    }
    if (!part.ackOnCommit) {
      // At most once for the output: the rows are the log's now, acked
      // whether or not Spark commits the batch.
      sub.ackIds(Subscriber.ACK, ids, 0, ids.length, 0);
    }
    writer = null;
    acks.reset();
  }

  private String summary() {
    StringBuilder s = new StringBuilder("{\"rows\":").append(rows).append(",\"bytes\":").append(bytes)
        .append(",\"drained\":").append(drained);
    if (decode != null) {
      s.append(",\"deadLettered\":").append(decode.deadLettered);
    }
    if (derived != null) {
      s.append(",\"eventTimeErrors\":").append(derived.eventTimeErrors);
    }
    if (idFilter != null) {
      s.append(",\"duplicates\":").append(idFilter.duplicates);
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
      } else if (live && stats != null && catchUp.grown(stats)) {
        SubscriberPool.discard(sub); // caught up: the next task opens one with streamsPerPartition
      } else {
        SubscriberPool.giveBack(part.subscriberConfig, sub, part.subscriberIdleMs);
      }
      sub = null;
    }
  }
}
