package io.pubsubgo.spark.bridge;

/** The scratch memory of one library call: its PgError and out slots. */
final class Calls implements AutoCloseable {
  final long err;
  final long out; // 8 slots of 8 bytes for out parameters

  Calls() {
    Native.load();
    err = OffHeap.calloc(NativeException.PG_ERROR_SIZE);
    out = OffHeap.calloc(64);
  }

  long slot(int i) {
    return out + 8L * i;
  }

  long get(int i) {
    return OffHeap.getLong(slot(i));
  }

  void check(int rc, String what) {
    NativeException.check(rc, err, what);
  }

  @Override
  public void close() {
    OffHeap.free(err);
    OffHeap.free(out);
  }
}
