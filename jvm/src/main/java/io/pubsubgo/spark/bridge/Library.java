package io.pubsubgo.spark.bridge;

/** Library-wide calls: version information, admin requests, a test hook. */
public final class Library {
  private Library() {}

  /** pg_version_info: what the library was built from, as JSON. */
  public static String versionInfo() {
    try (Calls c = new Calls()) {
      c.check(Native.version(c.slot(0), c.err), "version");
      return takeString(c.get(0));
    }
  }

  /** pg_admin: one admin request (docs/c-api.md), its JSON answer. */
  public static String admin(String requestJson) {
    long req = OffHeap.cString(requestJson);
    try (Calls c = new Calls()) {
      c.check(Native.admin(req, c.slot(0), c.err), "admin");
      return takeString(c.get(0));
    } finally {
      OffHeap.free(req);
    }
  }

  /** The columns of a batch without a decoder (the library's raw schema). */
  public static org.apache.spark.sql.types.StructType rawSchema() {
    try (Calls c = new Calls()) {
      long schema = OffHeap.calloc(ArrowTypes.SCHEMA_SIZE);
      try {
        c.check(Native.rawSchema(schema, c.err), "raw schema");
        return ArrowTypes.structOf(schema);
      } finally {
        Native.releaseSchema(schema);
        OffHeap.free(schema);
      }
    }
  }

  /** Panics inside Go (a library built with -tags pubsubgo_debug only). */
  public static void debugPanic() {
    try (Calls c = new Calls()) {
      c.check(Native.debugPanic(c.err), "debug panic");
    }
  }

  static String takeString(long p) {
    try {
      return OffHeap.string(p);
    } finally {
      Native.free(p);
    }
  }
}
