package io.pubsubgo.spark;

import io.pubsubgo.spark.sink.PubsubGoWrite;
import io.pubsubgo.spark.source.PubsubGoSource;
import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A subscription read as a stream, or a topic written in batch or
 * streaming append. The schema is the source's; a write takes any input
 * schema (ACCEPT_ANY_SCHEMA) and the sink checks its columns itself.
 */
final class PubsubGoTable implements SupportsRead, SupportsWrite {
  private final StructType schema;

  PubsubGoTable(StructType schema) {
    this.schema = schema;
  }

  @Override
  public String name() {
    return "pubsub-go";
  }

  @Override
  @SuppressWarnings("deprecation") // Spark 3.5 has only schema(); columns() came in 4.0
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.MICRO_BATCH_READ, TableCapability.BATCH_WRITE,
        TableCapability.STREAMING_WRITE, TableCapability.ACCEPT_ANY_SCHEMA);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return PubsubGoSource.scanBuilder(options, schema);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new PubsubGoWrite(info);
  }
}
