package io.pubsubgo.spark.bridge;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * Spark types of Arrow C Data schemas (the format strings of the Arrow C
 * Data Interface), for the types the library exports: the raw schema and
 * what the decoders produce. Offsets in struct ArrowSchema (64-bit):
 * format 0, name 8, metadata 16, flags 24, n_children 32, children 40.
 */
public final class ArrowTypes {
  private ArrowTypes() {}

  static final long SCHEMA_SIZE = 72;
  static final long FLAG_NULLABLE = 2;

  static String format(long schema) {
    return OffHeap.string(Platform.getLong(null, schema));
  }

  static String name(long schema) {
    return OffHeap.string(Platform.getLong(null, schema + 8));
  }

  static long child(long schema, int i) {
    long children = Platform.getLong(null, schema + 40);
    return Platform.getLong(null, children + 8L * i);
  }

  static int nChildren(long schema) {
    return (int) Platform.getLong(null, schema + 32);
  }

  static boolean nullable(long schema) {
    return (Platform.getLong(null, schema + 24) & FLAG_NULLABLE) != 0;
  }

  /** The Spark schema of a record batch's schema (a struct "+s"). */
  public static StructType structOf(long schema) {
    if (!"+s".equals(format(schema))) {
      throw new IllegalStateException("pubsub-go: a record batch's schema must be a struct, got " + format(schema));
    }
    List<StructField> fields = new ArrayList<>();
    for (int i = 0; i < nChildren(schema); i++) {
      long c = child(schema, i);
      fields.add(DataTypes.createStructField(name(c), sparkType(c), nullable(c)));
    }
    return DataTypes.createStructType(fields);
  }

  static DataType sparkType(long schema) {
    String f = format(schema);
    switch (f) {
      case "n": return DataTypes.NullType;
      case "b": return DataTypes.BooleanType;
      case "c": return DataTypes.ByteType;
      case "s": return DataTypes.ShortType;
      case "i": return DataTypes.IntegerType;
      case "l": return DataTypes.LongType;
      case "f": return DataTypes.FloatType;
      case "g": return DataTypes.DoubleType;
      case "u": case "U": return DataTypes.StringType;
      case "z": case "Z": return DataTypes.BinaryType;
      case "tdD": return DataTypes.DateType;
      case "+l": case "+L": {
        long c = child(schema, 0);
        return DataTypes.createArrayType(sparkType(c), nullable(c));
      }
      case "+m": {
        long entries = child(schema, 0);
        long v = child(entries, 1);
        return DataTypes.createMapType(sparkType(child(entries, 0)), sparkType(v), nullable(v));
      }
      case "+s": return structOf(schema);
      default:
    }
    if (f.startsWith("ts") && f.length() >= 4 && f.charAt(3) == ':') {
      // A zone (any) is an instant: TimestampType; none is local time.
      return f.length() > 4 ? DataTypes.TimestampType : DataTypes.TimestampNTZType;
    }
    if (f.startsWith("d:")) {
      String[] ps = f.substring(2).split(",");
      if (ps.length == 2 || (ps.length == 3 && "128".equals(ps[2]))) {
        return DataTypes.createDecimalType(Integer.parseInt(ps[0]), Integer.parseInt(ps[1]));
      }
    }
    throw new UnsupportedOperationException("pubsub-go: the Arrow type " + f + " (column " + name(schema)
        + ") has no Spark column here; expected one of the types of docs/source.md's schema mode");
  }
}
