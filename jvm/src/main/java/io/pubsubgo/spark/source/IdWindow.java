package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.CBatch;
import io.pubsubgo.spark.bridge.IdFiles;
import io.pubsubgo.spark.bridge.Subscriber;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * idAttribute with idAttributeWindowSeconds, as the Python source's
 * task/id_window.py (docs/source.md, "Deduplicating by an id attribute"):
 * a message whose attribute value was delivered within the window is
 * dropped, before Spark or the batch log sees it, and acked.
 *
 * <p>The window's state lives beside the batch log: each task that
 * publishes an entry then writes the ids it delivered to
 * {@code <log dir>/_id_window/<batch>-<partition>.arrow} (an Arrow IPC file
 * of one string column "id"; the JVM's log is one query's, so it has no
 * generation in the name). A task reads every such file younger than the
 * window (by modification time; older ones are deleted by whichever task
 * finds them) before it pulls, so the window spans micro-batches and
 * restarts. An executor keeps the files it read (they never change), so a
 * task reads only the new ones. Two copies taken in one micro-batch by
 * different tasks both pass (neither task has written its file yet); a
 * task that fails between publishing its entry and writing its ids leaves
 * them out of the window.
 *
 * <p>The filter is a row mask in Java over the attributes map column, as
 * onDecodeError drops dead-lettered rows (SchemaMode): Spark reads the kept
 * rows where they lie (CBatch.keepRows), and only a batch that lost rows
 * costs a copy, the library cutting its batch-log bytes to the kept rows
 * (Subscriber.Log.select). In Go the filter would need the window's ids
 * handed across before each take and the dropped ack ids handed back;
 * here it needs neither, and the Arrow work stays in the library.
 */
final class IdWindow implements Serializable {
  private static final long serialVersionUID = 1L;
  static final String DIR = "_id_window";

  final String attribute;
  final long windowSeconds;

  private IdWindow(String attribute, long windowSeconds) {
    this.attribute = attribute;
    this.windowSeconds = windowSeconds;
  }

  /** The options' window; null without idAttribute. */
  static IdWindow parse(OptionTable t, CaseInsensitiveStringMap o) {
    String attr = t.string(o, "idAttribute");
    if (attr == null) {
      if (t.raw(o, "idAttributeWindowSeconds") != null) {
        throw new IllegalArgumentException("pubsub-go: option idAttributeWindowSeconds needs idAttribute (the "
            + "attribute that carries each message's id)");
      }
      return null;
    }
    return new IdWindow(attr, t.number(o, "idAttributeWindowSeconds", 0));
  }

  // Files this executor has read: path -> ids. They are immutable once written.
  private static final Map<String, List<String>> CACHE = new ConcurrentHashMap<>();

  Filter filter(FileSystem fs, Path logDir) throws IOException {
    return new Filter(fs, new Path(logDir, DIR));
  }

  /** One task's view of the window: the ids delivered before it, plus the ones it delivers. */
  final class Filter {
    private final FileSystem fs;
    private final Path dir;
    private final Set<String> seen = new HashSet<>();
    private final List<String> delivered = new ArrayList<>();
    private final UTF8String key = UTF8String.fromString(attribute);
    long duplicates;

    private Filter(FileSystem fs, Path dir) throws IOException {
      this.fs = fs;
      this.dir = dir;
      load();
    }

    private void load() throws IOException {
      if (!fs.exists(dir)) {
        return;
      }
      long cutoff = System.currentTimeMillis() - windowSeconds * 1000;
      for (FileStatus s : fs.listStatus(dir)) {
        String path = s.getPath().toString();
        if (!s.getPath().getName().endsWith(".arrow")) {
          continue;
        }
        if (s.getModificationTime() < cutoff) {
          try {
            fs.delete(s.getPath(), false);
          } catch (IOException ignored) {
            // Another task removed it first.
          }
          CACHE.remove(path);
          continue;
        }
        List<String> ids = CACHE.get(path);
        if (ids == null) {
          try {
            ids = IdFiles.read(readAll(s));
          } catch (java.io.FileNotFoundException gone) {
            continue; // expired and removed meanwhile
          }
          CACHE.put(path, ids);
        }
        seen.addAll(ids);
      }
    }

    private byte[] readAll(FileStatus s) throws IOException {
      byte[] b = new byte[(int) s.getLen()];
      try (FSDataInputStream in = fs.open(s.getPath())) {
        in.readFully(0, b);
      }
      return b;
    }

    /**
     * Drops the rows of t whose id was delivered before, or earlier in this
     * task (a row without the attribute is kept), acking them; t itself when
     * none is dropped. The kept rows' batch, ack ids and log.
     */
    Subscriber.Take apply(Subscriber sub, Subscriber.Take t) {
      CBatch b = t.batch;
      int n = b.numRows();
      if (n == 0) {
        return t;
      }
      ColumnVector attrs = b.column(b.schema().fieldIndex("attributes"));
      boolean[] drop = new boolean[n];
      int dropped = 0;
      for (int row = 0; row < n; row++) {
        UTF8String v = attrs.isNullAt(row) ? null : lookup(attrs.getMap(row));
        if (v == null) {
          continue;
        }
        String id = v.toString();
        if (seen.add(id)) {
          delivered.add(id);
        } else {
          drop[row] = true;
          dropped++;
        }
      }
      if (dropped == 0) {
        return t;
      }
      duplicates += dropped;
      int[] keep = new int[n - dropped];
      ByteArrayOutputStream keptAcks = new ByteArrayOutputStream();
      ByteArrayOutputStream droppedAcks = new ByteArrayOutputStream();
      byte[] lines = t.ackLines;
      for (int row = 0, k = 0, s = 0, i = 0; i < lines.length; i++) {
        if (lines[i] == '\n') {
          (drop[row] ? droppedAcks : keptAcks).write(lines, s, i + 1 - s);
          if (!drop[row]) {
            keep[k++] = row;
          }
          row++;
          s = i + 1;
        }
      }
      byte[] acked = droppedAcks.toByteArray();
      // Acked now, whatever ackOnCommit: the copy Spark gets is another message's.
      try {
        sub.ackIds(Subscriber.ACK, acked, 0, acked.length, 0);
      } catch (RuntimeException e) { // they come back and are dropped again
        System.err.println("pubsub-go: idAttribute: acking " + dropped + " messages whose id was already delivered "
            + "failed: " + e);
      }
      Subscriber.Log log = t.log;
      Subscriber.Log kept = null;
      try {
        if (keep.length > 0 && log != null) {
          kept = log.select(keep);
        }
      } finally {
        if (log != null) {
          log.close();
        }
      }
      if (kept == null && log != null) {
        kept = log; // closed: a batch with no rows left writes no log
      }
      b.keepRows(keep);
      return new Subscriber.Take(b, keptAcks.toByteArray(), kept, t.waitedOut);
    }

    private UTF8String lookup(ColumnarMap m) {
      for (int i = 0; i < m.numElements(); i++) {
        if (key.equals(m.keyArray().getUTF8String(i))) {
          return m.valueArray().isNullAt(i) ? null : m.valueArray().getUTF8String(i);
        }
      }
      return null;
    }

    /** After the task's entry is published: its ids join the window (a failure is logged, not raised). */
    void record(long batch, int partition) {
      Path target = new Path(dir, String.format("%020d-%05d.arrow", batch, partition));
      Path tmp = new Path(dir, "." + UUID.randomUUID() + ".tmp");
      try {
        byte[] file = IdFiles.write(delivered);
        fs.mkdirs(dir);
        try (FSDataOutputStream out = fs.create(tmp, false)) {
          out.write(file);
        }
        if (!fs.rename(tmp, target)) {
          fs.delete(tmp, false);
          throw new IOException("renaming " + tmp + " to " + target + " failed");
        }
        CACHE.put(target.toString(), new ArrayList<>(delivered));
      } catch (IOException | RuntimeException e) {
        // The rows are recorded; only later copies of these ids may pass.
        System.err.println("pubsub-go: idAttribute: recording " + delivered.size() + " ids of batch " + batch
            + " partition " + partition + " failed: " + e);
      }
    }
  }
}
