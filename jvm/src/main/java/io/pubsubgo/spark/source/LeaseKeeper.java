package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.Subscriber;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.Path;

/**
 * The driver's side of ack-on-commit: a subscriber that never pulls (the
 * acker) acks the entries of committed batches, and renews the leases of
 * every uncommitted entry every quarter of commitLeaseSeconds, so rows a
 * task recorded stay leased until Spark commits them, also across a
 * driver restart (the entries are in the log). Without ackOnCommit the
 * tasks acked their rows already: it only removes committed batches.
 */
final class LeaseKeeper implements AutoCloseable {
  private final BatchLog log;
  private final Subscriber acker;
  private final int leaseSeconds;
  private final boolean ackOnCommit;
  private final ScheduledExecutorService timer;
  private volatile long committed = -1;
  // A published entry never changes: its ack ids are read from the log once.
  private final Map<Path, byte[]> ackIds = new HashMap<>();

  LeaseKeeper(BatchLog log, String ackerConfig, int leaseSeconds, boolean ackOnCommit) {
    this.log = log;
    this.ackOnCommit = ackOnCommit;
    this.acker = Subscriber.open(ackerConfig);
    this.leaseSeconds = leaseSeconds;
    timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "pubsub-go-lease-keeper");
      t.setDaemon(true);
      return t;
    });
    long every = Math.max(5, leaseSeconds / 4);
    timer.scheduleWithFixedDelay(this::renew, every, every, TimeUnit.SECONDS);
  }

  private synchronized void renew() {
    if (!ackOnCommit) {
      return;
    }
    try {
      for (long b : log.batches()) {
        if (b > committed) {
          for (Path e : log.entries(b)) {
            byte[] ids = ackIds(e);
            acker.ackIds(Subscriber.MODACK, ids, 0, ids.length, leaseSeconds);
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      // Retried at the next round; a lease that lapses means a redelivery, never a loss.
      System.err.println("pubsub-go: renewing the batch log's leases failed (retried): " + e);
    }
  }

  /** Acks every entry of batches up to end, then removes them from the log. */
  synchronized void commit(long end) throws IOException {
    for (long b : log.batches()) {
      if (b > end) {
        break;
      }
      for (Path e : ackOnCommit ? log.entries(b) : java.util.Collections.<Path>emptyList()) {
        byte[] ids = ackIds(e);
        acker.ackIds(Subscriber.ACK, ids, 0, ids.length, 0);
        ackIds.remove(e);
      }
      log.remove(b);
    }
    committed = end;
  }

  private byte[] ackIds(Path entry) throws IOException {
    byte[] ids = ackIds.get(entry);
    if (ids == null) {
      ids = log.acks(entry).lines.toByteArray();
      ackIds.put(entry, ids);
    }
    return ids;
  }

  @Override
  public void close() {
    timer.shutdownNow();
    acker.close();
  }
}
