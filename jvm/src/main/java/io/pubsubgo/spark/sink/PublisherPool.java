package io.pubsubgo.spark.sink;

import io.pubsubgo.spark.bridge.Publisher;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The executor JVM's publishers kept between tasks (publisherIdleMs), as
 * the Python sink's worker keeps its own (python/.../write/publisher_pool.py):
 * opening one costs a connection and a topic check, and every micro-batch
 * would start on a cold connection. A task takes one with the same config
 * (topic, connection, batching) if one is idle, else opens one.
 *
 * <p>A kept publisher holds nothing unacknowledged: a task gives it back
 * only after its flush returned with every message acknowledged, so closing
 * it later, or losing it with its executor, loses nothing. A task that fails
 * closes its publishers, so a retry starts clean. One idle for idleMs is
 * closed by a daemon thread; beyond MAX_IDLE idle ones the oldest is closed.
 */
public final class PublisherPool {
  /** Idle publishers kept at most (a routing sink keeps one per topic). */
  static final int MAX_IDLE = 8;

  private static final class Idle {
    final String config;
    final Publisher publisher;
    final long until;

    Idle(String config, Publisher publisher, long until) {
      this.config = config;
      this.publisher = publisher;
      this.until = until;
    }
  }

  private static final ArrayDeque<Idle> IDLE = new ArrayDeque<>(); // oldest first
  private static Thread reaper;

  private PublisherPool() {}

  /** An idle publisher opened with config, else a new one. */
  static Publisher take(String config) {
    synchronized (IDLE) {
      for (Iterator<Idle> it = IDLE.descendingIterator(); it.hasNext(); ) {
        Idle i = it.next();
        if (i.config.equals(config)) {
          it.remove();
          return i.publisher;
        }
      }
    }
    return Publisher.open(config);
  }

  /**
   * Keeps a publisher whose every message was acknowledged (the caller's
   * flush returned) for idleMs; 0 closes it now.
   */
  static void giveBack(String config, Publisher p, long idleMs) {
    if (idleMs <= 0) {
      p.close();
      return;
    }
    List<Publisher> evicted = new ArrayList<>();
    synchronized (IDLE) {
      IDLE.addLast(new Idle(config, p, System.currentTimeMillis() + idleMs));
      while (IDLE.size() > MAX_IDLE) {
        evicted.add(IDLE.removeFirst().publisher);
      }
      if (reaper == null) {
        reaper = new Thread(PublisherPool::reap, "pubsub-go-publisher-pool");
        reaper.setDaemon(true);
        reaper.start();
      }
      IDLE.notifyAll();
    }
    closeAll(evicted);
  }

  private static void reap() {
    while (true) {
      List<Publisher> expired = new ArrayList<>();
      synchronized (IDLE) {
        long now = System.currentTimeMillis();
        long next = Long.MAX_VALUE;
        for (Iterator<Idle> it = IDLE.iterator(); it.hasNext(); ) {
          Idle i = it.next();
          if (i.until <= now) {
            it.remove();
            expired.add(i.publisher);
          } else {
            next = Math.min(next, i.until);
          }
        }
        if (expired.isEmpty()) {
          try {
            IDLE.wait(next == Long.MAX_VALUE ? 0 : Math.max(1, next - now));
          } catch (InterruptedException e) {
            return;
          }
        }
      }
      closeAll(expired);
    }
  }

  private static void closeAll(List<Publisher> ps) {
    for (Publisher p : ps) {
      try {
        p.close();
      } catch (RuntimeException e) {
        // Nothing unacknowledged was in it: a failed close loses nothing.
      }
    }
  }

  /** How many idle publishers this JVM keeps for a topic (tests look through py4j). */
  public static int idleFor(String topic) {
    int n = 0;
    synchronized (IDLE) {
      for (Idle i : IDLE) {
        n += i.publisher != null && i.config.contains("\"topic\":\"" + topic + "\"") ? 1 : 0;
      }
    }
    return n;
  }
}
