package io.pubsubgo.spark;

import io.pubsubgo.spark.source.SourceSchema;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code format("pubsub-go")} on the JVM: Spark finds this class through
 * META-INF/services. It owns the options (source.SourceOptions) and hands
 * each query a table; everything native is libpubsubgo, through JNI.
 */
public final class PubsubGoProvider implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "pubsub-go";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SourceSchema.infer(options);
  }

  /** A .schema(...) is schema mode's output (docs/source.md, "Schema mode"). */
  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new PubsubGoTable(schema);
  }
}
