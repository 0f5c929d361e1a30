package io.pubsubgo.spark.bridge;

/**
 * A publisher to a dead-letter topic (onDecodeError=deadletter), through
 * go/capi/jni_deadletter.go: the failed rows of a decoded batch, taken
 * from the batch's Arrow IPC (what the task logs), are published with
 * their payload and attributes plus the error, the message id and the
 * subscription. Not thread-safe: one task uses it.
 */
public final class DeadLetters implements AutoCloseable {
  private static native int openPublisher(long config, long handleOut, long err);

  private static native int publishFailed(long handle, long data, long len, long subscription, long countOut, long err);

  private static native int closePublisher(long handle, long err);

  private final String config;
  private long handle;

  /** config: the publisher config (the contract's publisher_config) of the dead-letter topic. */
  public DeadLetters(String config) {
    this.config = config;
  }

  /**
   * Publishes the rows of the batch (Arrow IPC) that failed to decode and
   * waits until Pub/Sub has them; returns how many.
   */
  public long publish(byte[] ipc, String subscription) {
    if (handle == 0) {
      long cfg = OffHeap.cString(config);
      try (Calls c = new Calls()) {
        c.check(openPublisher(cfg, c.slot(0), c.err), "opening the dead-letter publisher");
        handle = c.get(0);
      } finally {
        OffHeap.free(cfg);
      }
    }
    long data = OffHeap.copyOf(ipc, 0, ipc.length);
    long sub = OffHeap.cString(subscription);
    try (Calls c = new Calls()) {
      c.check(publishFailed(handle, data, ipc.length, sub, c.slot(0), c.err), "publishing dead letters");
      return c.get(0);
    } finally {
      OffHeap.free(data);
      OffHeap.free(sub);
    }
  }

  @Override
  public void close() {
    if (handle != 0) {
      long h = handle;
      handle = 0;
      try (Calls c = new Calls()) {
        c.check(closePublisher(h, c.err), "closing the dead-letter publisher");
      }
    }
  }
}
