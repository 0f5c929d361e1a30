package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.Subscriber;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Subscribers kept in an executor between tasks of a query, so the next
 * task finds its streams open and messages prefetched (a subscriber per
 * task would reconnect each micro-batch). One task uses a subscriber at a
 * time. Unused for its query's subscriberIdleMs a subscriber is closed
 * (its prefetch nacked);
 * unused for PAUSE_MS its streams are paused (half-closed), so a killed
 * executor cuts none (go/internal/subscriber/pause.go). At JVM exit every
 * pooled subscriber is closed, and a close already under way in another
 * thread (the reaper's, a task's discard) is waited for: taken out of the
 * pool, it is still open until its close returns, and an exit that did not
 * wait cut its streams mid-drain.
 */
final class SubscriberPool {
  private SubscriberPool() {}

  static final long PAUSE_MS = 500;
  // How long the exit waits for closes under way: past the subscriber's drain
  // bound (go/internal/subscriber/config.go, drainTimeout, 10 s), so that the
  // exit does not cut a stream a slow server has yet to end (the Python
  // workers' exit waits as long: spark/worker_exit.py, CLOSE_BOUND_S).
  static final long EXIT_WAIT_MS = 12_000;

  private static final class Idle {
    final Subscriber sub;
    final long since = System.currentTimeMillis();
    long idleMs;
    boolean paused;

    Idle(Subscriber sub) {
      this.sub = sub;
    }
  }

  private static final Map<String, ArrayDeque<Idle>> IDLE = new HashMap<>();
  // Closes under way. One taken out of IDLE is entered in the same hold of
  // IDLE's lock, so closeAll, which looks under that lock, sees it; a
  // discard's (a subscriber in use, never in IDLE) needs no lock, so a task
  // never waits for the reaper, which holds it while pausing.
  private static final Map<Subscriber, CountDownLatch> CLOSING = new ConcurrentHashMap<>();
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

  /** Keeps sub for the next task of its config for idleMs (subscriberIdleMs); 0: closes it now. */
  static void giveBack(String config, Subscriber sub, long idleMs) {
    if (idleMs <= 0) {
      discard(sub);
      return;
    }
    Idle kept = new Idle(sub);
    kept.idleMs = idleMs;
    synchronized (IDLE) {
      IDLE.computeIfAbsent(config, k -> new ArrayDeque<>()).add(kept);
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
      beginClose(sub);
      close(sub);
    }
  }

  /** Counts sub as closing; the caller then calls close(sub). */
  private static void beginClose(Subscriber sub) {
    CLOSING.put(sub, new CountDownLatch(1));
  }

  private static void close(Subscriber sub) {
    try {
      sub.close();
    } finally {
      CountDownLatch done = CLOSING.remove(sub);
      if (done != null) {
        done.countDown();
      }
    }
  }

  private static void reap() {
    long now = System.currentTimeMillis();
    java.util.List<Subscriber> close = new java.util.ArrayList<>();
    synchronized (IDLE) {
      for (ArrayDeque<Idle> q : IDLE.values()) {
        for (Iterator<Idle> it = q.iterator(); it.hasNext(); ) {
          Idle i = it.next();
          if (now - i.since >= i.idleMs) {
            it.remove();
            beginClose(i.sub);
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
        close(s);
      } catch (RuntimeException ignored) {
        // Its prefetch's leases lapse instead.
      }
    }
  }

  /**
   * At JVM exit: half-close every pooled stream, nack every prefetch, and
   * wait (at most EXIT_WAIT_MS) for the closes other threads have begun.
   */
  static void closeAll() {
    java.util.List<Subscriber> all = new java.util.ArrayList<>();
    java.util.List<CountDownLatch> others;
    synchronized (IDLE) {
      others = new java.util.ArrayList<>(CLOSING.values());
      for (ArrayDeque<Idle> q : IDLE.values()) {
        for (Idle i : q) {
          all.add(i.sub);
          beginClose(i.sub);
        }
      }
      IDLE.clear();
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(EXIT_WAIT_MS);
    for (Subscriber s : all) {
      try {
        close(s);
      } catch (RuntimeException ignored) {
        // Exiting anyway.
      }
    }
    try {
      for (CountDownLatch done : others) {
        done.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
