package io.pubsubgo.spark.source;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.types.StructType;

/** The source package's entry point for the provider. */
public final class PubsubGoSource {
  private PubsubGoSource() {}

  public static Table table(StructType schema) {
    return new PubsubGoTable(schema);
  }
}
