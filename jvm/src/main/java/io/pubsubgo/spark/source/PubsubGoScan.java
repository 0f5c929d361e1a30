package io.pubsubgo.spark.source;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;

/** The source's scan: a micro-batch stream of the library's batches. */
final class PubsubGoScan implements ScanBuilder, Scan {
  private final SourceOptions opts;
  private final StructType schema;
  private final SchemaPlan plan; // schema mode; null: raw mode

  PubsubGoScan(SourceOptions opts, StructType schema) {
    this.opts = opts;
    this.schema = schema;
    this.plan = SchemaPlan.build(opts, schema);
  }

  @Override
  public Scan build() {
    return this;
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    return "pubsub-go " + opts.subscription;
  }

  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    return new PubsubGoStream(opts, checkpointLocation, plan);
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return SourceMetrics.supported();
  }
}
