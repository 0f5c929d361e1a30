package io.pubsubgo.spark.source;

import io.pubsubgo.spark.bridge.Library;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The source's schema without a .schema(...): the raw columns, or schema mode's derived ones. */
public final class SourceSchema {
  private SourceSchema() {}

  /**
   * The raw schema in raw mode; in schema mode the decoder's own columns
   * (Avro, protobuf, a module, schemaFrom=topic), derived on the driver with
   * the library, plus message_id, publish_time, attributes (SchemaPlan.derive).
   */
  public static StructType infer(CaseInsensitiveStringMap options) {
    // Spark asks a streaming write too (with the sink's options): the raw
    // schema there, and wherever no schema-mode option is given.
    if (!(options.containsKey("subscriptionId") || options.containsKey("pubsublite.subscription"))
        || !(options.containsKey("format") || options.containsKey("decoder") || options.containsKey("schemaFrom")
        || options.containsKey("attributeColumns") || options.containsKey("timestampAttribute"))) {
      return Library.rawSchema();
    }
    SourceOptions opts = new SourceOptions(options);
    return opts.decode != null ? SchemaPlan.derive(opts) : raw(opts);
  }

  /** Raw mode's columns: the library's, then the attribute-derived ones. */
  static StructType raw(SourceOptions opts) {
    return opts.derived == null ? Library.rawSchema() : opts.derived.extend(Library.rawSchema());
  }
}
