package io.pubsubgo.spark.bridge;

import java.nio.charset.StandardCharsets;

/**
 * A batch-log entry on a local disk, written by the library: chunks go to
 * the file straight from C memory (a batch's IPC bytes as the library
 * serialized them), one copy into the page cache instead of three through
 * Java arrays. Not thread-safe: one task writes its entry.
 */
public final class LogFile implements AutoCloseable {
  private long handle;

  private LogFile(long handle) {
    this.handle = handle;
  }

  /** Creates the file (it must not exist). */
  public static LogFile create(String path) {
    long p = OffHeap.cString(path);
    try (Calls c = new Calls()) {
      c.check(Native.logFileOpen(p, c.slot(0), c.err), "creating a batch-log entry");
      return new LogFile(c.get(0));
    } finally {
      OffHeap.free(p);
    }
  }

  /** Appends a chunk of the len bytes at the C address data. */
  public void chunk(byte kind, long data, long len) {
    try (Calls c = new Calls()) {
      c.check(Native.logFileChunk(live(), kind, data, len, c.err), "writing a batch-log entry");
    }
  }

  public void chunk(byte kind, byte[] b) {
    long data = OffHeap.copyOf(b, 0, b.length);
    try {
      chunk(kind, data, b.length);
    } finally {
      OffHeap.free(data);
    }
  }

  public void chunk(byte kind, String s) {
    chunk(kind, s.getBytes(StandardCharsets.UTF_8));
  }

  /** Flushes the file to the disk and closes it: the entry is complete. */
  public void finish() {
    close(true);
  }

  /** Closes the file as it is (an abandoned entry); idempotent. */
  @Override
  public void close() {
    close(false);
  }

  private void close(boolean sync) {
    if (handle == 0) {
      return;
    }
    long h = handle;
    handle = 0;
    try (Calls c = new Calls()) {
      c.check(Native.logFileClose(h, sync ? 1 : 0, c.err), "closing a batch-log entry");
    }
  }

  long handle() {
    return live();
  }

  private long live() {
    if (handle == 0) {
      throw new IllegalStateException("pubsub-go: the batch-log entry is closed");
    }
    return handle;
  }
}
