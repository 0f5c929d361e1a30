package io.pubsubgo.spark.sink;

import io.pubsubgo.spark.bridge.Publisher;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One task's writer: rows gathered into Arrow columns (ColumnBuffers),
 * handed to the Go publisher a batch at a time (it batches requests,
 * bounds bytes in flight and retries); commit returns only once Pub/Sub
 * acknowledged every message, so the sink is at least once, and a task
 * that fails leaves Spark to retry it.
 *
 * <p>Rows go to topicId or, with a topic column, each to the topic it
 * names: one publisher and one set of buffers per topic, opened on the
 * topic's first row (an empty partition opens nothing), so batching,
 * maxInFlightBytes and ordering are per topic and a topic's rows keep their
 * order, as in the Python sink (python/.../write/routing.py). Opening checks
 * the topic: a row naming one that does not exist fails the task with
 * NOT_FOUND naming it, before any row still gathered goes out. With
 * idAttribute each topic's publisher numbers its own rows
 * ({@code <prefix>-<n>}, n counting the task's rows for that topic), which
 * a retry reproduces, as the Python sink numbers them.
 *
 * <p>Publishers come from the executor's pool (PublisherPool,
 * publisherIdleMs) and go back to it only after commit's flush returned
 * with every message acknowledged; a task that fails closes them.
 */
final class PubsubGoDataWriter implements DataWriter<InternalRow> {
  /** Rows or bytes gathered (per topic) before a crossing into Go. */
  static final int BATCH_ROWS = 4096;
  static final long BATCH_BYTES = 8L << 20;

  private final SinkOptions opts;
  private final InputColumns in;
  private final String idPrefix;
  /** By topic path, in first-row order. */
  private final Map<String, Route> routes = new LinkedHashMap<>();
  /** The topic column's values seen so far (copies), so a row costs a lookup, not a path. */
  private final Map<UTF8String, Route> byValue = new HashMap<>();
  private Route nullRoute;
  private long rowsSeen;
  /** Every message acknowledged (commit's flush returned): the publishers may serve the next task. */
  private boolean flushed;

  /** One topic's publisher, buffers and count of the task's rows handed to it. */
  private static final class Route {
    final String topic;
    final String config;
    final Publisher publisher;
    final ColumnBuffers rows;
    long written;

    Route(String topic, String config, Publisher publisher, ColumnBuffers rows) {
      this.topic = topic;
      this.config = config;
      this.publisher = publisher;
      this.rows = rows;
    }
  }

  PubsubGoDataWriter(SinkOptions opts, InputColumns in, String idPrefix) {
    this.opts = opts;
    this.in = in;
    this.idPrefix = idPrefix;
  }

  @Override
  public void write(InternalRow row) throws IOException {
    Route r = routeOf(row);
    r.rows.append(row);
    rowsSeen++;
    if (r.rows.rows() >= BATCH_ROWS || r.rows.bytes() >= BATCH_BYTES) {
      publish(r);
    }
  }

  private Route routeOf(InternalRow row) {
    if (in.topic < 0 || row.isNullAt(in.topic)) {
      if (nullRoute == null) {
        nullRoute = open(route(null));
      }
      return nullRoute;
    }
    UTF8String v = row.getUTF8String(in.topic);
    Route r = byValue.get(v);
    if (r == null) {
      String path = route(v.toString());
      r = routes.get(path);
      if (r == null) {
        r = open(path);
      }
      byValue.put(v.clone(), r); // v may lie in a buffer Spark reuses for the next row
    }
    return r;
  }

  /** The topic path of a topic column's value; a bad value fails naming the task's row. */
  private String route(String value) {
    try {
      return opts.route(value);
    } catch (IllegalArgumentException e) {
      if (in.topic < 0) {
        throw e;
      }
      throw new IllegalArgumentException(e.getMessage() + " (the task's row " + rowsSeen + ")", e);
    }
  }

  private Route open(String topic) {
    Route r = routes.get(topic);
    if (r != null) {
      return r;
    }
    String config = opts.publisherConfig(topic);
    Publisher p;
    try {
      p = PublisherPool.take(config);
    } catch (RuntimeException e) {
      if (in.topic < 0) {
        throw e;
      }
      throw new IllegalStateException("pubsub-go: cannot publish the task's row " + rowsSeen + " to " + topic
          + " (its topic column): " + e.getMessage(), e);
    }
    ColumnBuffers b = null;
    try {
      if (opts.idAttribute != null) {
        p.startIds(idPrefix);
      }
      b = new ColumnBuffers(in);
    } catch (RuntimeException e) {
      p.close();
      throw e;
    }
    r = new Route(topic, config, p, b);
    routes.put(topic, r);
    return r;
  }

  private void publish(Route r) {
    int n = r.rows.rows();
    if (n == 0) {
      return;
    }
    try {
      r.publisher.publishColumns(r.rows.descriptor());
    } catch (RuntimeException e) {
      // The publisher names the batch's row; say which of the task's rows that is.
      String which = in.topic < 0 ? "the task's rows " : "the task's rows for " + r.topic + " ";
      throw new IllegalStateException(e.getMessage() + " (" + which + r.written + " to " + (r.written + n - 1)
          + " were in that batch)", e);
    }
    r.written += n;
    r.rows.reset();
  }

  @Override
  public WriterCommitMessage commit() throws IOException {
    for (Route r : routes.values()) {
      publish(r);
    }
    List<String> results = new ArrayList<>();
    for (Route r : routes.values()) {
      results.add(r.publisher.flush(opts.publishTimeoutMs));
    }
    flushed = true;
    return new PublishedMessage(rowsSeen, results.toString());
  }

  @Override
  public void abort() {
    // Nothing to undo: what was acknowledged is published. close() ends the publishers.
  }

  @Override
  public void close() {
    RuntimeException first = null;
    for (Route r : routes.values()) {
      try {
        if (flushed) {
          PublisherPool.giveBack(r.config, r.publisher, opts.publisherIdleMs);
        } else {
          r.publisher.close();
        }
      } catch (RuntimeException e) {
        first = first == null ? e : first;
      } finally {
        r.rows.close();
      }
    }
    routes.clear();
    byValue.clear();
    if (first != null) {
      throw first;
    }
  }

  /** What a task published, for the driver. */
  static final class PublishedMessage implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final long rows;
    final String result;

    PublishedMessage(long rows, String result) {
      this.rows = rows;
      this.result = result;
    }
  }
}
