package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.Subscriber;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Subscribers kept in an executor between tasks of a query, so the next
 * task finds its streams open and messages prefetched (a subscriber per
 * task would reconnect each micro-batch). One task uses a subscriber at a
 * time. Unused for IDLE_MS a subscriber is closed (its prefetch nacked);
 * unused for PAUSE_MS its streams are paused (half-closed), so a killed
 * executor cuts none (go/internal/subscriber/pause.go).
 */
final class SubscriberPool {
  private SubscriberPool() {}

  static final long IDLE_MS = 2000;
  static final long PAUSE_MS = 500;

  private static final class Idle {
    final Subscriber sub;
    final long since = System.currentTimeMillis();
    boolean paused;

    Idle(Subscriber sub) {
      this.sub = sub;
    }
  }

  private static final Map<String, ArrayDeque<Idle>> IDLE = new HashMap<>();
  private static ScheduledExecutorService reaper;

  static Subscriber take(String config) {
    Idle i;
    synchronized (IDLE) {
      ArrayDeque<Idle> q = IDLE.get(config);
      i = q == null ? null : q.pollLast();
    }
    if (i == null) {
      return Subscriber.open(config);
    }
    if (i.paused) {
      i.sub.pause(false);
    }
    return i.sub;
  }

  static void giveBack(String config, Subscriber sub) {
    synchronized (IDLE) {
      IDLE.computeIfAbsent(config, k -> new ArrayDeque<>()).add(new Idle(sub));
      if (reaper == null) {
        reaper = Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "pubsub-go-subscriber-pool");
          t.setDaemon(true);
          return t;
        });
        reaper.scheduleWithFixedDelay(SubscriberPool::reap, 250, 250, TimeUnit.MILLISECONDS);
        Runtime.getRuntime().addShutdownHook(new Thread(SubscriberPool::closeAll, "pubsub-go-pool-close"));
      }
    }
  }

  static void discard(Subscriber sub) {
    if (sub != null) {
      sub.close();
    }
  }

  private static void reap() {
    long now = System.currentTimeMillis();
    java.util.List<Subscriber> close = new java.util.ArrayList<>();
    synchronized (IDLE) {
      for (ArrayDeque<Idle> q : IDLE.values()) {
        for (Iterator<Idle> it = q.iterator(); it.hasNext(); ) {
          Idle i = it.next();
          if (now - i.since >= IDLE_MS) {
            it.remove();
            close.add(i.sub);
          } else if (!i.paused && now - i.since >= PAUSE_MS) {
            // Under the lock, so a task taking it cannot resume it first.
            i.paused = true;
            try {
              i.sub.pause(true);
            } catch (RuntimeException ignored) {
              // Closed meanwhile.
            }
          }
        }
      }
    }
    for (Subscriber s : close) {
      try {
        s.close();
      } catch (RuntimeException ignored) {
        // Its prefetch's leases lapse instead.
      }
    }
  }

  /** At JVM exit: half-close every pooled stream, nack every prefetch. */
  static void closeAll() {
    java.util.List<Subscriber> all = new java.util.ArrayList<>();
    synchronized (IDLE) {
      for (ArrayDeque<Idle> q : IDLE.values()) {
        for (Idle i : q) {
          all.add(i.sub);
        }
      }
      IDLE.clear();
    }
    for (Subscriber s : all) {
      try {
        s.close();
      } catch (RuntimeException ignored) {
        // Exiting anyway.
      }
    }
  }
}
