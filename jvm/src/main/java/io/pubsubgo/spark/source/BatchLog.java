package io.pubsubgo.spark.source;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The JVM source's batch log, on any Hadoop FileSystem (local, gs://,
 * s3a://, hdfs://): one entry per task, {@code <dir>/<batch>/part-<p>},
 * holding what the task handed to Spark, so a re-run of the batch (a task
 * retry, a driver restart) yields exactly the first run's rows, and the
 * driver can ack them when Spark commits the batch.
 *
 * <p>An entry is a sequence of chunks {@code [kind byte][int32 length][bytes]}:
 * {@code B} a batch as an Arrow IPC stream, {@code A} the ack ids of the
 * batch before it (one per line), {@code S} the task's summary (JSON,
 * last). A task writes it under a temporary name and renames it into
 * place when done: the first attempt to finish wins.
 */
final class BatchLog {
  static final byte BATCH = 'B';
  static final byte ACKS = 'A';
  static final byte SUMMARY = 'S';

  private final Path dir;
  private final FileSystem fs;

  BatchLog(String dir, Configuration conf) {
    this.dir = new Path(dir);
    try {
      FileSystem f = this.dir.getFileSystem(conf);
      // A local log skips Hadoop's client-side checksums (a CRC per 512
      // bytes and a .crc file beside each entry): the raw file system under
      // the cached one, whose settings other users of the cache keep.
      this.fs = f instanceof LocalFileSystem ? ((LocalFileSystem) f).getRawFileSystem() : f;
    } catch (IOException e) {
      throw new IllegalStateException("pubsub-go: the batch log at " + dir + " is unreachable: " + e, e);
    }
  }

  /** The log's directory and file system (idAttribute's window lives beside the entries: IdWindow). */
  Path dir() {
    return dir;
  }

  FileSystem fs() {
    return fs;
  }

  Path entry(long batch, int partition) {
    return new Path(new Path(dir, Long.toString(batch)), "part-" + partition);
  }

  boolean exists(Path p) throws IOException {
    return fs.exists(p);
  }

  /** A task's entry being written. */
  final class Writer implements AutoCloseable {
    private final Path target;
    private final Path tmp;
    private final FSDataOutputStream out;
    private final DataOutputStream data;

    Writer(long batch, int partition) throws IOException {
      target = entry(batch, partition);
      tmp = new Path(target.getParent(), "." + target.getName() + "." + UUID.randomUUID() + ".tmp");
      out = fs.create(tmp, false);
      data = new DataOutputStream(out);
    }

    void chunk(byte kind, byte[] b) throws IOException {
      data.writeByte(kind);
      data.writeInt(b.length);
      data.write(b);
    }

    /** A chunk straight from the library's C memory (a batch's IPC bytes). */
    void chunk(byte kind, io.pubsubgo.spark.bridge.Subscriber.Log log) throws IOException {
      if (log.length > Integer.MAX_VALUE) {
        throw new IOException("pubsub-go: a batch of " + log.length + " bytes is over a log chunk's 2 GiB");
      }
      data.writeByte(kind);
      data.writeInt((int) log.length);
      log.writeTo(data, scratch);
    }

    private final byte[] scratch = new byte[1 << 20];

    /** Publishes the entry; false when another attempt published it first. */
    boolean publish() throws IOException {
      data.flush();
      out.hsync();
      data.close();
      if (fs.exists(target) || !fs.rename(tmp, target)) {
        fs.delete(tmp, false);
        return false;
      }
      return true;
    }

    @Override
    public void close() {
      try {
        data.close();
      } catch (IOException ignored) {
        // The entry is abandoned; what follows deletes it.
      }
      try {
        fs.delete(tmp, false);
      } catch (IOException ignored) {
        // Left behind, it is never read: only published names are.
      }
    }
  }

  /** Visits an entry's chunks in order; skipRows skips the batches unread. */
  interface ChunkVisitor {
    void chunk(byte kind, byte[] data) throws IOException;
  }

  void read(Path entry, boolean skipRows, ChunkVisitor v) throws IOException {
    try (FSDataInputStream in = fs.open(entry); DataInputStream d = new DataInputStream(in)) {
      while (true) {
        byte kind;
        try {
          kind = d.readByte();
        } catch (EOFException end) {
          return;
        }
        int n = d.readInt();
        if (skipRows && kind == BATCH) {
          in.seek(in.getPos() + n);
          continue;
        }
        byte[] b = new byte[n];
        d.readFully(b);
        v.chunk(kind, b);
      }
    }
  }

  /** An entry's ack ids (one per line) and its summary. */
  static final class Acks {
    final ByteArrayOutputStream lines = new ByteArrayOutputStream();
    String summary = "{}";
  }

  Acks acks(Path entry) throws IOException {
    Acks a = new Acks();
    read(entry, true, (kind, b) -> {
      if (kind == ACKS) {
        a.lines.write(b, 0, b.length);
      } else if (kind == SUMMARY) {
        a.summary = new String(b, StandardCharsets.UTF_8);
      }
    });
    return a;
  }

  /** The batches in the log, ascending. */
  List<Long> batches() throws IOException {
    List<Long> out = new ArrayList<>();
    if (!fs.exists(dir)) {
      return out;
    }
    for (FileStatus s : fs.listStatus(dir)) {
      try {
        out.add(Long.parseLong(s.getPath().getName()));
      } catch (NumberFormatException ignored) {
        // Not a batch directory.
      }
    }
    out.sort(null);
    return out;
  }

  /** The published entries of a batch. */
  List<Path> entries(long batch) throws IOException {
    List<Path> out = new ArrayList<>();
    Path b = new Path(dir, Long.toString(batch));
    if (!fs.exists(b)) {
      return out;
    }
    for (FileStatus s : fs.listStatus(b)) {
      if (s.getPath().getName().startsWith("part-")) {
        out.add(s.getPath());
      }
    }
    return out;
  }

  void remove(long batch) throws IOException {
    fs.delete(new Path(dir, Long.toString(batch)), true);
  }
}
