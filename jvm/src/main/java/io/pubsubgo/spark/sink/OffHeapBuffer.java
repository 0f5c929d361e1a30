package io.pubsubgo.spark.sink;

import io.pubsubgo.spark.bridge.OffHeap;
import org.apache.spark.unsafe.Platform;

/** A growable buffer of off-heap memory: one Arrow buffer being filled. */
final class OffHeapBuffer implements AutoCloseable {
  long addr;
  private long cap;
  long len;

  OffHeapBuffer(long initial) {
    cap = Math.max(64, initial);
    addr = OffHeap.calloc(cap);
  }

  void ensure(long more) {
    if (len + more <= cap) {
      return;
    }
    long n = Math.max(cap * 2, len + more);
    long a = OffHeap.calloc(n);
    Platform.copyMemory(null, addr, null, a, len);
    OffHeap.free(addr);
    addr = a;
    cap = n;
  }

  void putInt(int v) {
    ensure(4);
    Platform.putInt(null, addr + len, v);
    len += 4;
  }

  void putLong(long v) {
    ensure(8);
    Platform.putLong(null, addr + len, v);
    len += 8;
  }

  void put(Object base, long offset, int n) {
    ensure(n);
    Platform.copyMemory(base, offset, null, addr + len, n);
    len += n;
  }

  /** Sets bit i (a validity bitmap: 1 = valid), growing the buffer to hold it. */
  void setBit(long i, boolean v) {
    long byteAt = i >>> 3;
    if (byteAt >= len) {
      ensure(byteAt + 1 - len);
      Platform.setMemory(addr + len, (byte) 0, byteAt + 1 - len);
      len = byteAt + 1;
    }
    byte b = Platform.getByte(null, addr + byteAt);
    int mask = 1 << (i & 7);
    Platform.putByte(null, addr + byteAt, (byte) (v ? (b | mask) : (b & ~mask)));
  }

  void reset() {
    len = 0;
  }

  @Override
  public void close() {
    OffHeap.free(addr);
    addr = 0;
  }
}
