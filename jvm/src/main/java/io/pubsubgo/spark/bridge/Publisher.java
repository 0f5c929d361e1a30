package io.pubsubgo.spark.bridge;

/**
 * A libpubsubgo publisher (batching, flow control, retries, ordering) seen
 * from the JVM. Rows reach it as Arrow columns laid out in off-heap memory
 * by the caller (sink/ColumnBuffers), described by a block of int64 slots
 * (go/capi/jni_publish.go names them). Not thread-safe.
 */
public final class Publisher implements AutoCloseable {
  private long handle;

  private Publisher(long handle) {
    this.handle = handle;
  }

  /** pg_publisher_open with a publisher config (the contract's publisher_config). */
  public static Publisher open(String configJson) {
    long cfg = OffHeap.cString(configJson);
    try (Calls c = new Calls()) {
      c.check(Native.publisherOpen(cfg, c.slot(0), c.err), "opening a publisher");
      return new Publisher(c.get(0));
    } finally {
      OffHeap.free(cfg);
    }
  }

  /** Publishes the rows the descriptor at desc lays out; blocks on backpressure. */
  public void publishColumns(long desc) {
    try (Calls c = new Calls()) {
      c.check(Native.publisherPublishColumns(handle(), desc, c.err), "publishing");
    }
  }

  /** Rows published from now on get the ids prefix-0, prefix-1, ... (needs idAttribute). */
  public void startIds(String prefix) {
    long p = OffHeap.cString(prefix);
    try (Calls c = new Calls()) {
      c.check(Native.publisherStartIds(handle(), p, c.err), "numbering messages");
    } finally {
      OffHeap.free(p);
    }
  }

  /** Waits until the server acknowledged every message; its JSON result. */
  public String flush(long timeoutMs) {
    try (Calls c = new Calls()) {
      c.check(Native.publisherFlush(handle(), timeoutMs, c.slot(0), c.err), "flushing");
      return Library.takeString(c.get(0));
    }
  }

  private long handle() {
    if (handle == 0) {
      throw new IllegalStateException("pubsub-go: the publisher is closed");
    }
    return handle;
  }

  @Override
  public void close() {
    if (handle == 0) {
      return;
    }
    long h = handle;
    handle = 0;
    try (Calls c = new Calls()) {
      c.check(Native.publisherClose(h, c.err), "closing a publisher");
    }
  }
}
