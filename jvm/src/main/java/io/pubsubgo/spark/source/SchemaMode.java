package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.CBatch;
import io.pubsubgo.spark.bridge.DeadLetters;
import io.pubsubgo.spark.bridge.NativeException;
import io.pubsubgo.spark.bridge.Subscriber;
import java.io.ByteArrayOutputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;

/**
 * Schema mode in a task. The subscriber hands out batches already decoded
 * (its config's "decoder"): the decoded columns, the raw columns and the
 * decode error column. This applies onDecodeError to the rows that failed
 * (fail the task, their batch nacked; publish them to the dead-letter topic
 * and ack them; or keep them with the error) and hands Spark the output's
 * columns by name, over the same C memory (the Python front end's
 * on_decode_error.py and SchemaPlan.project).
 */
final class SchemaMode implements Serializable {
  private static final long serialVersionUID = 1L;

  /** For each output column, the batch column it is: its own name, or the decode error column. */
  private final String[] from;
  private final String onError;
  private final String subscription;
  private final String deadLetterConfig; // deadletter: the publisher config of the dead-letter topic
  private final long timeoutMs;
  private final long memoryLimitMb;
  private final String errorColumn = DecodeOptions.decodeErrorColumn();

  SchemaMode(String[] from, String onError, String subscription, String deadLetterConfig, long timeoutMs,
      long memoryLimitMb) {
    this.from = from;
    this.onError = onError;
    this.subscription = subscription;
    this.deadLetterConfig = deadLetterConfig;
    this.timeoutMs = timeoutMs;
    this.memoryLimitMb = memoryLimitMb;
  }

  Reader reader() {
    return new Reader();
  }

  /** onDecodeError=fail: a record failed to decode. */
  static final class DecodeFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    DecodeFailedException(String message) {
      super(message);
    }
  }

  /** A task's side: its dead-letter publisher and count. */
  final class Reader implements AutoCloseable {
    private DeadLetters deadLetters;
    long deadLettered;

    /**
     * Takes a batch (Subscriber.take, with its log), drops the ids already
     * delivered (idAttribute; ids null: none) and applies onDecodeError;
     * a decoder fault (time limit, memory cap, trap) is raised naming its
     * kind and the source option behind it.
     */
    Subscriber.Take take(Subscriber sub, long maxRows, long waitMs, IdWindow.Filter ids) {
      Subscriber.Take t;
      try {
        t = sub.take(maxRows, waitMs, true);
      } catch (NativeException e) {
        throw fault(e);
      }
      if (ids != null) { // before onDecodeError: a dropped copy is neither dead-lettered nor failed
        t = ids.apply(sub, t);
      }
      if (t.batch.numRows() == 0) {
        return t;
      }
      CBatch b = t.batch;
      int[] cols = columns(b.schema());
      int[] bad = "column".equals(onError) ? new int[0] : failed(b);
      if (bad.length == 0) {
        b.select(cols, null);
        return t;
      }
      if ("fail".equals(onError)) {
        String msg = failMessage(b, bad);
        try {
          sub.ackIds(Subscriber.NACK, t.ackLines, 0, t.ackLines.length, 0);
        } finally {
          b.close();
          t.log.close();
        }
        throw new DecodeFailedException(msg);
      }
      if (deadLetters == null) {
        deadLetters = new DeadLetters(deadLetterConfig);
      }
      try {
        deadLettered += deadLetters.publish(t.log.bytes(), subscription); // returns once Pub/Sub has them
      } catch (RuntimeException e) {
        b.close();
        t.log.close();
        throw e;
      }
      List<byte[]> lines = lines(t.ackLines);
      ByteArrayOutputStream badAcks = new ByteArrayOutputStream();
      ByteArrayOutputStream goodAcks = new ByteArrayOutputStream();
      int[] good = new int[b.columnar().numRows() - bad.length];
      for (int i = 0, g = 0, k = 0; i < lines.size(); i++) {
        byte[] l = lines.get(i);
        if (k < bad.length && bad[k] == i) {
          badAcks.write(l, 0, l.length);
          k++;
        } else {
          goodAcks.write(l, 0, l.length);
          good[g++] = i;
        }
      }
      byte[] acked = badAcks.toByteArray();
      sub.ackIds(Subscriber.ACK, acked, 0, acked.length, 0);
      b.select(cols, good);
      return new Subscriber.Take(b, goodAcks.toByteArray(), t.log, t.waitedOut);
    }

    /** A replayed batch (the batch log holds the decoded batch as taken): the same rows and columns. */
    void replay(CBatch b) {
      int[] cols = columns(b.schema());
      if (!"deadletter".equals(onError)) {
        b.select(cols, null);
        return;
      }
      int[] bad = failed(b);
      int n = b.columnar().numRows();
      int[] good = new int[n - bad.length];
      for (int i = 0, g = 0, k = 0; i < n; i++) {
        if (k < bad.length && bad[k] == i) {
          k++;
        } else {
          good[g++] = i;
        }
      }
      b.select(cols, good);
    }

    @Override
    public void close() {
      if (deadLetters != null) {
        deadLetters.close();
        deadLetters = null;
      }
    }
  }

  private RuntimeException fault(NativeException e) {
    String hint;
    switch (e.kind()) {
      case "decoder_time_limit":
        hint = " (source option decoderTimeoutMs=" + timeoutMs + ")";
        break;
      case "decoder_memory_limit":
        hint = " (source option decoderMemoryLimitMB=" + memoryLimitMb + ")";
        break;
      case "decoder_crashed":
        hint = "";
        break;
      default:
        return e;
    }
    return new NativeException(e.code(), e.kind(), e.getMessage() + hint + " [" + e.kind() + "]");
  }

  private int[] columns(StructType batch) {
    int[] out = new int[from.length];
    for (int i = 0; i < from.length; i++) {
      out[i] = batch.fieldIndex(from[i]);
    }
    return out;
  }

  /** The rows whose decode error is set, in order. */
  private int[] failed(CBatch b) {
    ColumnVector errs = b.column(b.schema().fieldIndex(errorColumn));
    int n = b.columnar().numRows();
    if (errs.numNulls() == n) {
      return new int[0];
    }
    int[] out = new int[n - errs.numNulls()];
    for (int i = 0, k = 0; i < n; i++) {
      if (!errs.isNullAt(i)) {
        out[k++] = i;
      }
    }
    return out;
  }

  private String failMessage(CBatch b, int[] bad) {
    ColumnVector ids = b.column(b.schema().fieldIndex("message_id"));
    ColumnVector errs = b.column(b.schema().fieldIndex(errorColumn));
    StringBuilder shown = new StringBuilder();
    for (int i = 0; i < Math.min(5, bad.length); i++) {
      if (i > 0) {
        shown.append("; ");
      }
      shown.append("message_id ").append(ids.getUTF8String(bad[i])).append(": ").append(errs.getUTF8String(bad[i]));
    }
    String more = bad.length > 5 ? " (and " + (bad.length - 5) + " more)" : "";
    return bad.length + " message(s) of " + subscription + " failed to decode (onDecodeError=fail): " + shown + more
        + ". They were nacked. Use onDecodeError=deadletter with deadLetterTopicId, or column with errorColumn, to "
        + "keep the query running";
  }

  /** Ack id lines, each with its newline. */
  private static List<byte[]> lines(byte[] b) {
    List<byte[]> out = new ArrayList<>();
    int s = 0;
    for (int i = 0; i < b.length; i++) {
      if (b[i] == '\n') {
        byte[] l = new byte[i + 1 - s];
        System.arraycopy(b, s, l, 0, l.length);
        out.add(l);
        s = i + 1;
      }
    }
    return out;
  }
}
