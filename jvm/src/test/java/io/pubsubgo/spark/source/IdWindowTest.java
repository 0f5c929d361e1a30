package io.pubsubgo.spark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pubsubgo.spark.bridge.EmbeddedEmulator;
import io.pubsubgo.spark.bridge.IdFiles;
import io.pubsubgo.spark.bridge.Library;
import io.pubsubgo.spark.bridge.Subscriber;
import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * idAttribute in a task, against the library's embedded emulator: copies
 * taken with the first messages and in a later batch are dropped and
 * acked, the window's file holds the delivered ids, and a re-run of the
 * task replays exactly what the first run handed out.
 */
class IdWindowTest {
  private static final String TOPIC = "projects/proj/topics/ids";
  private static final String SUB = "projects/proj/subscriptions/ids";

  @TempDir
  File dir;

  @Test
  void copiesAreDroppedAckedAndNeverReplayed() throws Exception {
    try (EmbeddedEmulator emu = new EmbeddedEmulator()) {
      Library.admin("{\"op\":\"create_topic\",\"emulator_host\":\"" + emu.host + "\",\"topic\":\"" + TOPIC + "\"}");
      Library.admin("{\"op\":\"create_subscription\",\"emulator_host\":\"" + emu.host + "\",\"topic\":\"" + TOPIC
          + "\",\"subscription\":\"" + SUB + "\"}");
      emu.publish(TOPIC, payloads("a", 10), "uid", uids(0, 10));
      emu.publish(TOPIC, payloads("b", 10), "uid", uids(0, 10)); // a publisher's retries
      Map<String, String> o = new HashMap<>();
      o.put("idAttribute", "uid");
      IdWindow window = IdWindow.parse(new OptionTable("source"), new CaseInsensitiveStringMap(o));
      String config = "{\"subscription\":\"" + SUB + "\",\"emulator_host\":\"" + emu.host + "\"}";

      List<String[]> first = read(partition(0, config, window));
      assertEquals(10, first.size());
      assertEquals(new TreeSet<>(Arrays.asList(uids(0, 10))), uidsOf(first));
      File idFile = new File(dir, "_id_window/00000000000000000000-00000.arrow");
      assertTrue(idFile.isFile());
      assertEquals(new TreeSet<>(Arrays.asList(uids(0, 10))),
          new TreeSet<>(IdFiles.read(Files.readAllBytes(idFile.toPath()))));
      List<String[]> replayed = read(partition(0, config, window)); // the entry is there: a re-run
      assertEquals(ids(first), ids(replayed));

      emu.publish(TOPIC, payloads("c", 10), "uid", uids(5, 15));
      List<String[]> second = read(partition(1, config, window));
      assertEquals(new TreeSet<>(Arrays.asList(uids(10, 15))), uidsOf(second));
      assertEquals(5, second.size());

      try (Subscriber s = Subscriber.open(config)) { // every copy was acked: nothing comes again
        Subscriber.Take t = s.take(100, 2000, false);
        assertEquals(0, t.batch.numRows());
        t.batch.close();
      }
    }
  }

  private PubsubGoPartition partition(long batch, String config, IdWindow window) {
    PubsubGoPartition p = new PubsubGoPartition(batch, 0, config, dir.getPath(), new SerializableConf(new Configuration()),
        1000, 100, 10_000, 200, 1000, true, 600);
    p.ackOnCommit = false; // acked once the entry is published, without a driver
    p.idWindow = window;
    p.streamsPerPartition = 1;
    return p;
  }

  /** (message id, uid) of every row the task hands out. */
  private static List<String[]> read(PubsubGoPartition p) throws Exception {
    int idCol = Library.rawSchema().fieldIndex("message_id");
    int attrCol = Library.rawSchema().fieldIndex("attributes");
    List<String[]> out = new ArrayList<>();
    PubsubGoPartitionReader r = new PubsubGoPartitionReader(p);
    try {
      while (r.next()) {
        ColumnarBatch b = r.get();
        for (int i = 0; i < b.numRows(); i++) {
          ColumnarMap m = b.column(attrCol).getMap(i);
          out.add(new String[] {b.column(idCol).getUTF8String(i).toString(),
              m.valueArray().getUTF8String(0).toString()});
        }
      }
    } finally {
      r.close();
    }
    return out;
  }

  private static TreeSet<String> uidsOf(List<String[]> rows) {
    TreeSet<String> out = new TreeSet<>();
    for (String[] r : rows) {
      out.add(r[1]);
    }
    return out;
  }

  private static List<String> ids(List<String[]> rows) {
    List<String> out = new ArrayList<>();
    for (String[] r : rows) {
      out.add(r[0]);
    }
    return out;
  }

  private static String[] payloads(String prefix, int n) {
    String[] out = new String[n];
    for (int i = 0; i < n; i++) {
      out[i] = prefix + i;
    }
    return out;
  }

  private static String[] uids(int from, int to) {
    String[] out = new String[to - from];
    for (int i = from; i < to; i++) {
      out[i - from] = Integer.toString(i);
    }
    return out;
  }
}
