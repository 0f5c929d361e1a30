package io.pubsubgo.spark.bridge;

import java.nio.charset.StandardCharsets;
import org.apache.spark.unsafe.Platform;

/**
 * Off-heap memory for the JNI calls: C structs, out parameters and strings.
 * Spark's own {@link Platform} does the reads and writes, so this front end
 * uses no memory API that Spark does not.
 */
public final class OffHeap {
  private OffHeap() {}

  /** Zeroed memory; free with {@link #free}. */
  public static long calloc(long bytes) {
    long p = Platform.allocateMemory(bytes);
    Platform.setMemory(p, (byte) 0, bytes);
    return p;
  }

  public static void free(long p) {
    if (p != 0) {
      Platform.freeMemory(p);
    }
  }

  /** s as NUL-terminated UTF-8; free with {@link #free}. */
  public static long cString(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    long p = Platform.allocateMemory(b.length + 1L);
    Platform.copyMemory(b, Platform.BYTE_ARRAY_OFFSET, null, p, b.length);
    Platform.putByte(null, p + b.length, (byte) 0);
    return p;
  }

  /** b in off-heap memory; free with {@link #free}. */
  public static long copyOf(byte[] b, int off, int len) {
    long p = Platform.allocateMemory(Math.max(1, len));
    Platform.copyMemory(b, Platform.BYTE_ARRAY_OFFSET + off, null, p, len);
    return p;
  }

  public static byte[] bytes(long p, long len) {
    if (len > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("pubsub-go: " + len + " bytes do not fit a Java array");
    }
    byte[] b = new byte[(int) len];
    Platform.copyMemory(null, p, b, Platform.BYTE_ARRAY_OFFSET, len);
    return b;
  }

  /** The NUL-terminated UTF-8 string at p ("" for 0). */
  public static String string(long p) {
    if (p == 0) {
      return "";
    }
    long n = 0;
    while (Platform.getByte(null, p + n) != 0) {
      n++;
    }
    return new String(bytes(p, n), StandardCharsets.UTF_8);
  }

  public static long getLong(long p) {
    return Platform.getLong(null, p);
  }

  public static int getInt(long p) {
    return Platform.getInt(null, p);
  }
}
