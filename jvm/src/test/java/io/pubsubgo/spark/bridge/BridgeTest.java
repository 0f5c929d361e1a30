package io.pubsubgo.spark.bridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The JNI bridge in a plain JVM, against the library's embedded emulator:
 * typed errors, the raw schema, a round trip of messages through the
 * publisher and the subscriber into columns read in place, under GC.
 */
class BridgeTest {
  private static long emulator;
  private static String host;

  @BeforeAll
  static void startEmulator() {
    try (Calls c = new Calls()) {
      long hp = OffHeap.cString("127.0.0.1:0");
      c.check(Native.emulatorStart(hp, c.slot(0), c.slot(1), c.err), "emulator");
      OffHeap.free(hp);
      emulator = c.get(0);
      host = Library.takeString(c.get(1));
    }
  }

  @AfterAll
  static void stopEmulator() {
    try (Calls c = new Calls()) {
      c.check(Native.emulatorStop(emulator, c.err), "emulator");
    }
  }

  @Test
  void aBadConfigIsATypedErrorNamingTheKey() {
    NativeException e = assertThrows(NativeException.class, () -> Subscriber.open("{\"subscription\": 5}"));
    assertEquals(3, e.code());
    assertEquals("invalid_argument", e.kind());
    assertTrue(e.getMessage().contains("subscription"), e.getMessage());
    assertFalse(e.isPanic());
  }

  @Test
  void anUnknownSubscriptionIsNotFound() {
    NativeException e = assertThrows(NativeException.class, () -> Subscriber.open(
        "{\"subscription\": \"projects/proj/subscriptions/missing\", \"emulator_host\": \"" + host + "\"}"));
    assertEquals(5, e.code(), e.getMessage());
    assertEquals("not_found", e.kind());
  }

  @Test
  void theRawSchemaIsTheLibrarys() {
    StructType raw = Library.rawSchema();
    assertEquals("message_id", raw.fields()[0].name());
    assertEquals(DataTypes.BinaryType, raw.apply("payload").dataType());
    assertEquals(DataTypes.TimestampType, raw.apply("publish_time").dataType());
    assertTrue(Library.versionInfo().contains("\"abi\""));
  }

  @Test
  void messagesComeBackAsColumnsReadInPlaceUnderGc() throws Exception {
    Library.admin("{\"op\":\"create_topic\",\"emulator_host\":\"" + host + "\",\"topic\":\"projects/proj/topics/rt\"}");
    Library.admin("{\"op\":\"create_subscription\",\"emulator_host\":\"" + host
        + "\",\"topic\":\"projects/proj/topics/rt\",\"subscription\":\"projects/proj/subscriptions/rt\"}");
    int n = 5000;
    publish(n);
    Thread gc = new Thread(() -> {
      while (!Thread.currentThread().isInterrupted()) {
        System.gc();
      }
    });
    gc.start();
    List<String> payloads = new ArrayList<>();
    try (Subscriber sub = Subscriber.open("{\"subscription\": \"projects/proj/subscriptions/rt\", "
        + "\"emulator_host\": \"" + host + "\", \"batch_size\": 700}")) {
      long deadline = System.currentTimeMillis() + 60_000;
      while (payloads.size() < n && System.currentTimeMillis() < deadline) {
        Subscriber.Take t = sub.take(1000, 200, true);
        try (CBatch b = t.batch) {
          ColumnarBatch cb = b.columnar();
          for (int r = 0; r < cb.numRows(); r++) {
            payloads.add(new String(cb.column(3).getBinary(r), "UTF-8"));
            assertEquals("v" + payloads.get(payloads.size() - 1), cb.column(2).getMap(r).valueArray()
                .getUTF8String(0).toString());
          }
          if (cb.numRows() > 0) { // the log copy replays the same rows
            byte[] log = t.log.bytes();
            try (CBatch replay = Subscriber.importIpc(log, 0, log.length)) {
              assertEquals(cb.numRows(), replay.numRows());
              assertEquals(cb.column(0).getUTF8String(0), replay.columnar().column(0).getUTF8String(0));
            }
          }
          if (cb.numRows() >= 3) { // a log cut to some rows (idAttribute) replays just those, in order
            int[] keep = {0, 2, cb.numRows() - 1};
            try (Subscriber.Log cut = t.log.select(keep)) {
              byte[] sel = cut.bytes();
              try (CBatch replay = Subscriber.importIpc(sel, 0, sel.length)) {
                assertEquals(keep.length, replay.numRows());
                for (int i = 0; i < keep.length; i++) {
                  assertEquals(cb.column(0).getUTF8String(keep[i]), replay.columnar().column(0).getUTF8String(i));
                  assertEquals(cb.column(2).getMap(keep[i]).valueArray().getUTF8String(0),
                      replay.columnar().column(2).getMap(i).valueArray().getUTF8String(0));
                }
              }
            }
            String third = new String(cb.column(3).getBinary(2), "UTF-8");
            b.keepRows(new int[] {2});
            assertEquals(1, b.numRows());
            assertEquals(third, new String(b.columnar().column(3).getBinary(0), "UTF-8"));
          }
          sub.ackIds(Subscriber.ACK, t.ackLines, 0, t.ackLines.length, 0);
          t.log.close();
        }
      }
    } finally {
      gc.interrupt();
      gc.join();
    }
    assertEquals(n, payloads.size());
    assertEquals(n, payloads.stream().distinct().count());
  }

  @Test
  void idFilesRoundTripAnyId() {
    StringBuilder longId = new StringBuilder();
    for (int i = 0; i < 70_000; i++) {
      longId.append('x');
    }
    List<String> ids = java.util.Arrays.asList("a", "", "line\nbreak", "\u00e9t\u00e9 \ud83d\ude00", longId.toString());
    assertEquals(ids, IdFiles.read(IdFiles.write(ids)));
    assertEquals(new ArrayList<String>(), IdFiles.read(IdFiles.write(new ArrayList<String>())));
    assertThrows(NativeException.class, () -> IdFiles.read(new byte[] {1, 2, 3}));
  }

  /** n messages p0.. with attribute k=v<payload>, through the Go publisher. */
  private static void publish(int n) {
    String[] payloads = new String[n];
    String[] values = new String[n];
    for (int i = 0; i < n; i++) {
      payloads[i] = "p" + i;
      values[i] = "vp" + i;
    }
    EmbeddedEmulator.publish(host, "projects/proj/topics/rt", payloads, "k", values);
  }
}
