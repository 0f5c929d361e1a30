package io.pubsubgo.spark.source;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A subscription as a Spark table: read as a stream. */
final class PubsubGoTable implements SupportsRead {
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
    return EnumSet.of(TableCapability.MICRO_BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new PubsubGoScan(new SourceOptions(options), schema);
  }
}
