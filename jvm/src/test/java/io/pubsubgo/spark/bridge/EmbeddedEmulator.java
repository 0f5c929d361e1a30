package io.pubsubgo.spark.bridge;

import java.nio.charset.StandardCharsets;
import org.apache.spark.unsafe.Platform;

/** The library's embedded emulator for tests outside this package, with a publisher of attributed messages. */
public final class EmbeddedEmulator implements AutoCloseable {
  private final long handle;
  public final String host;

  public EmbeddedEmulator() {
    try (Calls c = new Calls()) {
      long hp = OffHeap.cString("127.0.0.1:0");
      try {
        c.check(Native.emulatorStart(hp, c.slot(0), c.slot(1), c.err), "emulator");
      } finally {
        OffHeap.free(hp);
      }
      handle = c.get(0);
      host = Library.takeString(c.get(1));
    }
  }

  /** Publishes payloads to topic through the Go publisher, each with the attribute key=values[i]. */
  public void publish(String topic, String[] payloads, String key, String[] values) {
    publish(host, topic, payloads, key, values);
  }

  /** As publish, to the emulator at host. */
  static void publish(String host, String topic, String[] payloads, String key, String[] values) {
    // The column layout of go/capi/jni_publish.go, filled by hand: payload (binary) and attributes.
    int n = payloads.length;
    byte[] data = String.join("", payloads).getBytes(StandardCharsets.UTF_8);
    byte[] keys = repeat(key, n).getBytes(StandardCharsets.UTF_8);
    byte[] vals = String.join("", values).getBytes(StandardCharsets.UTF_8);
    long payOff = OffHeap.calloc(4L * (n + 1));
    long attrOff = OffHeap.calloc(4L * (n + 1));
    long keyOff = OffHeap.calloc(4L * (n + 1));
    long valOff = OffHeap.calloc(4L * (n + 1));
    int p = 0;
    int k = 0;
    int v = 0;
    for (int i = 0; i < n; i++) {
      p += payloads[i].getBytes(StandardCharsets.UTF_8).length;
      k += key.getBytes(StandardCharsets.UTF_8).length;
      v += values[i].getBytes(StandardCharsets.UTF_8).length;
      Platform.putInt(null, payOff + 4L * (i + 1), p);
      Platform.putInt(null, attrOff + 4L * (i + 1), i + 1);
      Platform.putInt(null, keyOff + 4L * (i + 1), k);
      Platform.putInt(null, valOff + 4L * (i + 1), v);
    }
    long payData = OffHeap.copyOf(data, 0, data.length);
    long keyData = OffHeap.copyOf(keys, 0, keys.length);
    long valData = OffHeap.copyOf(vals, 0, vals.length);
    // descSlots of go/capi/jni_publish.go: every slot is read (0: no such column).
    long desc = OffHeap.calloc(8 * 20);
    long[] slots = new long[20];
    slots[0] = n;
    slots[1] = payOff;
    slots[2] = payData;
    slots[8] = attrOff;
    slots[9] = keyOff;
    slots[10] = keyData;
    slots[12] = valOff;
    slots[13] = valData;
    for (int i = 0; i < slots.length; i++) {
      Platform.putLong(null, desc + 8L * i, slots[i]);
    }
    try (Publisher pub = Publisher.open("{\"topic\":\"" + topic + "\",\"emulator_host\":\"" + host + "\"}")) {
      pub.publishColumns(desc);
      String flushed = pub.flush(30_000);
      if (!flushed.contains("\"published\":" + n)) {
        throw new IllegalStateException("published: " + flushed);
      }
    } finally {
      for (long a : new long[] {payOff, attrOff, keyOff, valOff, payData, keyData, valData, desc}) {
        OffHeap.free(a);
      }
    }
  }

  private static String repeat(String s, int n) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < n; i++) {
      b.append(s);
    }
    return b.toString();
  }

  @Override
  public void close() {
    try (Calls c = new Calls()) {
      c.check(Native.emulatorStop(handle, c.err), "emulator");
    }
  }
}
