package io.pubsubgo.spark.sink;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * The sink's write, batch and streaming: the options and input columns are
 * checked here, on the driver, before any task runs; each task publishes
 * its rows with a publisher of its own. Message ids (idAttribute) are
 * {@code <queryId or writeId>-<epoch>-<partition>-<row>}, as the Python
 * sink numbers them, so a retried task reproduces its ids.
 */
public final class PubsubGoWrite implements WriteBuilder, Write, BatchWrite, StreamingWrite {
  private final SinkOptions opts;
  private final InputColumns in;
  private final String writeId;

  public PubsubGoWrite(LogicalWriteInfo info) {
    this.opts = new SinkOptions(info.options(), InputColumns.routed(info.schema()));
    this.in = new InputColumns(info.schema(), opts);
    if (opts.schemaFromTopic) {
      opts.checkEncoding(in);
    }
    this.writeId = info.queryId();
  }

  @Override
  public Write build() {
    return this;
  }

  @Override
  public BatchWrite toBatch() {
    return this;
  }

  @Override
  public StreamingWrite toStreaming() {
    return this;
  }

  @Override
  public String description() {
    return "pubsub-go " + (opts.topic != null ? opts.topic : "(the topics of the topic column)");
  }

  /** No commit coordination: a task's messages are published when it ends, whichever attempt wins. */
  @Override
  public boolean useCommitCoordinator() {
    return false;
  }

  // Batch ---------------------------------------------------------------
  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    return new Factory(opts, in, writeId);
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    // Every task returned after Pub/Sub acknowledged its messages.
  }

  @Override
  public void abort(WriterCommitMessage[] messages) {
    // Messages acknowledged are published; a topic has no rollback.
  }

  // Streaming -----------------------------------------------------------
  @Override
  public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
    return new Factory(opts, in, writeId);
  }

  @Override
  public void commit(long epochId, WriterCommitMessage[] messages) {
    // As commit above: every task flushed before returning.
  }

  @Override
  public void abort(long epochId, WriterCommitMessage[] messages) {
    // As abort above.
  }

  static final class Factory implements DataWriterFactory, StreamingDataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final SinkOptions opts;
    private final InputColumns in;
    private final String writeId;

    Factory(SinkOptions opts, InputColumns in, String writeId) {
      this.opts = opts;
      this.in = in;
      this.writeId = writeId;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new PubsubGoDataWriter(opts, in, writeId + "-0-" + partitionId);
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
      return new PubsubGoDataWriter(opts, in, writeId + "-" + epochId + "-" + partitionId);
    }
  }
}
