package io.pubsubgo.spark.source;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A local batch log's entries: chunks read back as written, the first attempt to publish wins, an abandoned entry leaves nothing. */
class BatchLogTest {
  @TempDir
  File dir;

  private List<String> chunks(BatchLog log, Path entry) throws Exception {
    List<String> out = new ArrayList<>();
    log.read(entry, false, (kind, b) -> out.add((char) kind + ":" + new String(b, StandardCharsets.ISO_8859_1)));
    return out;
  }

  @Test
  void aLocalEntryReadsBackChunkForChunkAndTheFirstAttemptWins() throws Exception {
    BatchLog log = new BatchLog(dir.toURI().toString(), new Configuration(false));
    byte[] big = new byte[3 << 20]; // past the writer's buffers
    for (int i = 0; i < big.length; i++) {
      big[i] = (byte) (i * 31);
    }
    BatchLog.Writer w = log.new Writer(5, 1);
    w.chunk(BatchLog.BATCH, big);
    w.chunk(BatchLog.ACKS, "a\nb\n".getBytes(StandardCharsets.UTF_8));
    w.chunk(BatchLog.SUMMARY, new byte[0]);
    assertTrue(w.publish());
    Path entry = log.entry(5, 1);
    List<String> got = chunks(log, entry);
    assertEquals(3, got.size());
    assertArrayEquals(big, got.get(0).substring(2).getBytes(StandardCharsets.ISO_8859_1));
    assertEquals("A:a\nb\n", got.get(1));
    assertEquals("S:", got.get(2));
    assertEquals("a\nb\n", log.acks(entry).lines.toString("UTF-8"));

    BatchLog.Writer late = log.new Writer(5, 1); // a second attempt of the same task
    late.chunk(BatchLog.BATCH, new byte[] {1});
    assertFalse(late.publish());
    assertEquals(3, chunks(log, entry).size());
    assertEquals(1, new File(dir, "5").list().length, "the losing attempt's file is gone");
  }

  @Test
  void anAbandonedEntryLeavesNothing() throws Exception {
    BatchLog log = new BatchLog(dir.getPath(), new Configuration(false));
    BatchLog.Writer w = log.new Writer(0, 0);
    w.chunk(BatchLog.BATCH, new byte[] {1, 2, 3});
    w.close();
    w.close();
    assertFalse(log.exists(log.entry(0, 0)));
    assertEquals(0, Files.list(new File(dir, "0").toPath()).count());
  }
}
