package io.pubsubgo.spark.bridge;

import org.apache.spark.sql.types.StructType;

/**
 * Schema mode's driver-side calls (go/capi/jni_schema.go): the decoder's
 * target schema from Spark's own description of it, and the decoder
 * opened on the driver, for its check and the schema it derives. Its JNI
 * entry points are declared here, as Native's are there (longs and ints
 * only; the library is loaded by {@link Native#load}, through Calls).
 */
public final class Decoders {
  private Decoders() {}

  private static native int sparkArrowSchema(long sparkJson, long b64Out, long err);

  private static native int decoderSchema(long config, long schemaOut, long err);

  /**
   * The Arrow IPC schema (base64) of a Spark schema, by the mapping of the
   * Python front end (pyspark's to_arrow_schema, timestamps in UTC): the
   * decoder config's "schema".
   */
  public static String arrowSchemaBase64(StructType schema) {
    long json = OffHeap.cString(schema.json());
    try (Calls c = new Calls()) {
      c.check(sparkArrowSchema(json, c.slot(0), c.err), "the decoder's target schema");
      return Library.takeString(c.get(0));
    } finally {
      OffHeap.free(json);
    }
  }

  /**
   * Opens the decoder of a decoder config (the subscriber config's
   * "decoder") and closes it: an error names what the decoder rejects.
   * Returns the decoder's own columns (without the error column).
   */
  public static StructType open(String decoderConfigJson) {
    long cfg = OffHeap.cString(decoderConfigJson);
    long schema = OffHeap.calloc(ArrowTypes.SCHEMA_SIZE);
    try (Calls c = new Calls()) {
      c.check(decoderSchema(cfg, schema, c.err), "opening the decoder");
      try {
        return ArrowTypes.structOf(schema);
      } finally {
        Native.releaseSchema(schema);
      }
    } finally {
      OffHeap.free(schema);
      OffHeap.free(cfg);
    }
  }
}
