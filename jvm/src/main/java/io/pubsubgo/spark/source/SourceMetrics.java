package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.Subscriber;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/** The task metrics the Spark UI shows for the source's scan node. */
public final class SourceMetrics {
  private SourceMetrics() {}

  /** Per task: rows, then these subscriber counters (PgSubscriberStats names). */
  static final String[] COUNTERS = {"pulled", "redeliveries", "decode_errors", "bytes_pulled", "streams_restarted"};

  static final String ROWS = "rowsHandedOut";

  /** One summed metric per counter. */
  public static final class Sum extends CustomSumMetric {
    private final String name;

    public Sum() {
      this(ROWS); // Spark instantiates metric classes by their no-argument constructor
    }

    Sum(String name) {
      this.name = name;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public String description() {
      return "pub/sub " + name;
    }
  }

  static CustomMetric[] supported() {
    CustomMetric[] m = new CustomMetric[COUNTERS.length + 1];
    m[0] = new Sum(ROWS);
    for (int i = 0; i < COUNTERS.length; i++) {
      m[i + 1] = new Sum(COUNTERS[i]);
    }
    return m;
  }

  static CustomTaskMetric[] taskValues(long rows, long[] stats) {
    CustomTaskMetric[] out = new CustomTaskMetric[COUNTERS.length + 1];
    out[0] = value(ROWS, rows);
    for (int i = 0; i < COUNTERS.length; i++) {
      out[i + 1] = value(COUNTERS[i], stats == null ? 0 : stats[Subscriber.stat(COUNTERS[i])]);
    }
    return out;
  }

  private static CustomTaskMetric value(String name, long v) {
    return new CustomTaskMetric() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public long value() {
        return v;
      }
    };
  }
}
