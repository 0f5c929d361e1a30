package io.pubsubgo.spark.sink;

import io.pubsubgo.spark.bridge.Publisher;
import java.io.IOException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One task's writer: rows gathered into Arrow columns (ColumnBuffers),
 * handed to the Go publisher a batch at a time (it batches requests,
 * bounds bytes in flight and retries); commit returns only once Pub/Sub
 * acknowledged every message, so the sink is at least once, and a task
 * that fails leaves Spark to retry it.
 */
final class PubsubGoDataWriter implements DataWriter<InternalRow> {
  /** Rows or bytes gathered before a crossing into Go. */
  static final int BATCH_ROWS = 4096;
  static final long BATCH_BYTES = 8L << 20;

  private final SinkOptions opts;
  private final Publisher publisher;
  private final ColumnBuffers rows;
  private long written;

  PubsubGoDataWriter(SinkOptions opts, InputColumns in, String idPrefix) {
    this.opts = opts;
    this.publisher = Publisher.open(opts.publisherConfig());
    this.rows = new ColumnBuffers(in);
    if (opts.idAttribute != null) {
      publisher.startIds(idPrefix);
    }
  }

  @Override
  public void write(InternalRow row) throws IOException {
    rows.append(row);
    if (rows.rows() >= BATCH_ROWS || rows.bytes() >= BATCH_BYTES) {
      publish();
    }
  }

  private void publish() {
    if (rows.rows() == 0) {
      return;
    }
    try {
      publisher.publishColumns(rows.descriptor());
    } catch (RuntimeException e) {
      // The publisher names the batch's row; say which of the task's rows that is.
      throw new IllegalStateException(e.getMessage() + " (the task's rows " + written + " to "
          + (written + rows.rows() - 1) + " were in that batch)", e);
    }
    written += rows.rows();
    rows.reset();
  }

  @Override
  public WriterCommitMessage commit() throws IOException {
    publish();
    String result = publisher.flush(opts.publishTimeoutMs);
    return new PublishedMessage(written, result);
  }

  @Override
  public void abort() {
    // Nothing to undo: what was acknowledged is published. close() ends the publisher.
  }

  @Override
  public void close() {
    try {
      publisher.close();
    } finally {
      rows.close();
    }
  }

  /** What a task published, for the driver. */
  static final class PublishedMessage implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final long rows;
    final String result;

    PublishedMessage(long rows, String result) {
      this.rows = rows;
      this.result = result;
    }
  }
}
