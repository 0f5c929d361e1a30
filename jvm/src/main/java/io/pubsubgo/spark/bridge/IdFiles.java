package io.pubsubgo.spark.bridge;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * idAttribute's id files: Arrow IPC files of one string column "id", as
 * the Python source writes them, written and read by the library (the JVM
 * front end has no Arrow library). Ids cross as little-endian uint32
 * lengths, each followed by its UTF-8 bytes (an id may hold any character).
 */
public final class IdFiles {
  private IdFiles() {}

  /** The id file holding ids. */
  public static byte[] write(List<String> ids) {
    ByteArrayOutputStream enc = new ByteArrayOutputStream();
    for (String id : ids) {
      byte[] b = id.getBytes(StandardCharsets.UTF_8);
      enc.write(b.length & 0xff);
      enc.write((b.length >>> 8) & 0xff);
      enc.write((b.length >>> 16) & 0xff);
      enc.write((b.length >>> 24) & 0xff);
      enc.write(b, 0, b.length);
    }
    return call(enc.toByteArray(), true, "writing an id file");
  }

  /** The ids of an id file. */
  public static List<String> read(byte[] file) {
    byte[] enc = call(file, false, "reading an id file");
    List<String> out = new ArrayList<>();
    for (int i = 0; i < enc.length; ) {
      int n = (enc[i] & 0xff) | (enc[i + 1] & 0xff) << 8 | (enc[i + 2] & 0xff) << 16 | (enc[i + 3] & 0xff) << 24;
      out.add(new String(enc, i + 4, n, StandardCharsets.UTF_8));
      i += 4 + n;
    }
    return out;
  }

  private static byte[] call(byte[] in, boolean toArrow, String what) {
    long data = OffHeap.copyOf(in, 0, in.length);
    try (Calls c = new Calls()) {
      int rc = toArrow ? Native.idsToArrow(data, in.length, c.slot(0), c.slot(1), c.err)
          : Native.idsFromArrow(data, in.length, c.slot(0), c.slot(1), c.err);
      c.check(rc, what);
      try {
        return OffHeap.bytes(c.get(0), c.get(1));
      } finally {
        Native.free(c.get(0));
      }
    } finally {
      OffHeap.free(data);
    }
  }
}
