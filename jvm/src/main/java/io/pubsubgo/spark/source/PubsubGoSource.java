package io.pubsubgo.spark.source;

import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The source package's entry point for the table. */
public final class PubsubGoSource {
  private PubsubGoSource() {}

  public static ScanBuilder scanBuilder(CaseInsensitiveStringMap options, StructType schema) {
    return new PubsubGoScan(new SourceOptions(options), schema);
  }
}
