package io.pubsubgo.spark.bridge;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * A libpubsubgo subscriber (StreamingPull, flow control, leases) seen from
 * the JVM. Not thread-safe: one task uses it at a time.
 */
public final class Subscriber implements AutoCloseable {
  public static final int ACK = 0;
  public static final int NACK = 1;
  public static final int MODACK = 2;
  public static final int RELEASE = 3;

  private long handle;
  private long schema;      // the batches' ArrowSchema, exported on the first take
  private StructType sparkSchema;

  private Subscriber(long handle) {
    this.handle = handle;
  }

  /** pg_subscriber_open with a subscriber config (the contract's subscriber_config). */
  public static Subscriber open(String configJson) {
    long cfg = OffHeap.cString(configJson);
    try (Calls c = new Calls()) {
      c.check(Native.subscriberOpen(cfg, c.slot(0), c.err), "opening a subscriber");
      return new Subscriber(c.get(0));
    } finally {
      OffHeap.free(cfg);
    }
  }

  /** What one take handed out. */
  public static final class Take {
    public final CBatch batch;
    /** The rows' ack ids, one per line (UTF-8). */
    public final byte[] ackLines;
    /** The batch as an Arrow IPC stream, when asked for (else null); close it once written. */
    public final Log log;
    public final boolean waitedOut;

    public Take(CBatch batch, byte[] ackLines, Log log, boolean waitedOut) {
      this.batch = batch;
      this.ackLines = ackLines;
      this.log = log;
      this.waitedOut = waitedOut;
    }
  }

  /**
   * Waits up to waitMs for up to maxRows messages (pg_subscriber_next);
   * withLog also serializes the batch for the batch log.
   */
  public Take take(long maxRows, long waitMs, boolean withLog) {
    long array = OffHeap.calloc(CBatch.ARRAY_SIZE);
    boolean first = schema == 0;
    if (first) {
      schema = OffHeap.calloc(ArrowTypes.SCHEMA_SIZE);
    }
    try (Calls c = new Calls()) {
      int rc = Native.subscriberTake(handle(), maxRows, waitMs, array, first ? schema : 0,
          c.slot(0), c.slot(1), withLog ? c.slot(2) : 0, c.slot(3), c.slot(4), c.err);
      if (rc != 0) {
        OffHeap.free(array);
        if (first) {
          OffHeap.free(schema);
          schema = 0;
        }
        c.check(rc, "pulling");
      }
      if (first) {
        sparkSchema = ArrowTypes.structOf(schema);
      }
      byte[] acks = takeBytes(c.get(0), c.get(1));
      Log log = withLog ? new Log(c.get(2), c.get(3)) : null;
      boolean waitedOut = Platform.getInt(null, c.slot(4)) != 0;
      return new Take(new CBatch(array, schema, sparkSchema), acks, log, waitedOut);
    }
  }

  /**
   * A batch's Arrow IPC stream in C memory (malloc'd by the library): written
   * to the batch log from there, in chunks, without a Java copy of the whole.
   */
  public static final class Log implements AutoCloseable {
    private long addr;
    public final long length;
    private byte[] copy;

    Log(long addr, long length) {
      this.addr = addr;
      this.length = length;
    }

    /** The bytes as a Java array (copied once, on first use). */
    public byte[] bytes() {
      if (copy == null) {
        copy = OffHeap.bytes(live(), length);
      }
      return copy;
    }

    /** Writes the bytes to out through scratch, a chunk at a time. */
    public void writeTo(java.io.OutputStream out, byte[] scratch) throws java.io.IOException {
      long at = live();
      for (long done = 0; done < length; ) {
        int n = (int) Math.min(scratch.length, length - done);
        Platform.copyMemory(null, at + done, scratch, Platform.BYTE_ARRAY_OFFSET, n);
        out.write(scratch, 0, n);
        done += n;
      }
    }

    /**
     * The log of only the rows at rows (ascending indexes into this batch),
     * for a batch the task hands to Spark without some of its rows.
     */
    public Log select(int[] rows) {
      long at = OffHeap.calloc(4L * Math.max(1, rows.length));
      try (Calls c = new Calls()) {
        for (int i = 0; i < rows.length; i++) {
          Platform.putInt(null, at + 4L * i, rows[i]);
        }
        c.check(Native.ipcSelect(live(), length, at, rows.length, c.slot(0), c.slot(1), c.err),
            "cutting a batch's log to its kept rows");
        return new Log(c.get(0), c.get(1));
      } finally {
        OffHeap.free(at);
      }
    }

    private long live() {
      if (addr == 0) {
        throw new IllegalStateException("pubsub-go: a batch's log bytes were used after close");
      }
      return addr;
    }

    @Override
    public void close() {
      if (addr != 0) {
        Native.free(addr);
        addr = 0;
      }
    }
  }

  /** The Spark schema of the batches (after the first take). */
  public StructType schema() {
    return sparkSchema;
  }

  private static byte[] takeBytes(long p, long len) {
    try {
      return OffHeap.bytes(p, len);
    } finally {
      Native.free(p);
    }
  }

  /** Acks, nacks, modacks (to deadlineSeconds) or releases ack ids given one per line. */
  public void ackIds(int op, byte[] lines, int off, int len, int deadlineSeconds) {
    if (len == 0) {
      return;
    }
    long data = OffHeap.copyOf(lines, off, len);
    try (Calls c = new Calls()) {
      c.check(Native.subscriberAckIds(handle(), op, data, len, deadlineSeconds, c.err), OPS[op]);
    } finally {
      OffHeap.free(data);
    }
  }

  public void ackIds(int op, String lines, int deadlineSeconds) {
    byte[] b = lines.getBytes(StandardCharsets.UTF_8);
    ackIds(op, b, 0, b.length, deadlineSeconds);
  }

  private static final String[] OPS = {"acking", "nacking", "extending leases", "releasing leases"};

  /** pg_subscriber_stats: the counters, in PgSubscriberStats' order. */
  public long[] stats() {
    long out = OffHeap.calloc(8L * STAT_NAMES.length);
    try (Calls c = new Calls()) {
      c.check(Native.subscriberStats(handle(), out, c.err), "reading counters");
      long[] v = new long[STAT_NAMES.length];
      for (int i = 0; i < v.length; i++) {
        v[i] = OffHeap.getLong(out + 8L * i);
      }
      return v;
    } finally {
      OffHeap.free(out);
    }
  }

  /** The fields of struct PgSubscriberStats, in order (pubsubgo.h). */
  public static final String[] STAT_NAMES = {
    "pulled", "handed_out", "held", "acked", "nacked", "extended", "redeliveries", "decode_errors",
    "bytes_pulled", "streams_restarted", "nacked_on_close", "buffered", "quiet_ms", "ack_rejected",
    "modack_rejected", "flow_full_ms", "streams_down_ms", "blocked_ms", "late", "streams",
  };

  public static int stat(String name) {
    for (int i = 0; i < STAT_NAMES.length; i++) {
      if (STAT_NAMES[i].equals(name)) {
        return i;
      }
    }
    throw new IllegalArgumentException(name);
  }

  public void pause(boolean paused) {
    try (Calls c = new Calls()) {
      c.check(Native.subscriberPause(handle(), paused ? 1 : 0, c.err), "pausing");
    }
  }

  private long handle() {
    if (handle == 0) {
      throw new IllegalStateException("pubsub-go: the subscriber is closed");
    }
    return handle;
  }

  /** Closes the subscriber: pending acks sent, unhanded messages nacked. */
  @Override
  public void close() {
    if (handle == 0) {
      return;
    }
    long h = handle;
    handle = 0;
    try (Calls c = new Calls()) {
      c.check(Native.subscriberClose(h, c.err), "closing a subscriber");
    } finally {
      if (schema != 0) {
        Native.releaseSchema(schema);
        OffHeap.free(schema);
        schema = 0;
      }
    }
  }

  /** Reads one batch from an Arrow IPC stream logged by take (a replay). */
  public static CBatch importIpc(byte[] ipc, int off, int len) {
    long data = OffHeap.copyOf(ipc, off, len);
    long array = OffHeap.calloc(CBatch.ARRAY_SIZE);
    long schema = OffHeap.calloc(ArrowTypes.SCHEMA_SIZE);
    try (Calls c = new Calls()) {
      int rc = Native.ipcImport(data, len, array, schema, c.err);
      if (rc != 0) {
        OffHeap.free(array);
        c.check(rc, "replaying the batch log");
      }
      // The vectors copy what they need of the schema when built.
      return new CBatch(array, schema, ArrowTypes.structOf(schema));
    } finally {
      OffHeap.free(data);
      Native.releaseSchema(schema);
      OffHeap.free(schema);
    }
  }
}
