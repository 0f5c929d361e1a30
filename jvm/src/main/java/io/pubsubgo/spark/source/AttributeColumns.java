package io.pubsubgo.spark.source;

import java.io.Serializable;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Columns derived from message attributes beside the attributes map (raw
 * mode): attributeColumns (named attributes as STRING columns) and
 * timestampAttribute (an event-time TIMESTAMP column: epoch milliseconds in
 * decimal, or RFC 3339 with a zone, as Beam's withTimestampAttribute). The
 * Python front end's spark/read/options/attribute_columns.py, by the same rules and
 * in the same words. They are worked out from the attributes of each batch
 * a task hands Spark, pulled or replayed from the batch log alike, so a
 * replayed batch carries the same values.
 */
final class AttributeColumns implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final Pattern NAME = Pattern.compile("^[^\\s,`]+$");
  private static final Pattern MILLIS = Pattern.compile("^-?[0-9]{1,15}$");

  final List<String> names;
  final String tsAttribute; // null: no event-time column
  final String tsColumn;

  private AttributeColumns(List<String> names, String tsAttribute, String tsColumn) {
    this.names = names;
    this.tsAttribute = tsAttribute;
    this.tsColumn = tsColumn;
  }

  private static String trimmed(String v) {
    return v == null || v.trim().isEmpty() ? null : v.trim();
  }

  /** The derived columns the options ask for, or null; raw: the raw columns' names; schemaMode: format/decoder given. */
  static AttributeColumns parse(OptionTable t, CaseInsensitiveStringMap o, List<String> raw, boolean schemaMode) {
    String list = trimmed(t.raw(o, "attributeColumns"));
    List<String> names = new ArrayList<>();
    if (list != null) {
      for (String n : list.split(",")) {
        if (!n.trim().isEmpty()) {
          names.add(n.trim());
        }
      }
    }
    String tsAttr = trimmed(t.raw(o, "timestampAttribute"));
    String tsCol = trimmed(t.raw(o, "timestampColumn"));
    if (tsCol != null && tsAttr == null) {
      throw new IllegalArgumentException("pubsub-go: option timestampColumn is set but timestampAttribute is not: "
          + "set timestampAttribute to the attribute the event time is parsed from");
    }
    if (tsCol == null) {
      tsCol = t.string(o, "timestampColumn"); // the table's default
    }
    if (names.isEmpty() && tsAttr == null) {
      return null;
    }
    if (schemaMode) {
      throw new IllegalArgumentException("pubsub-go: options attributeColumns and timestampAttribute apply to the raw "
          + "schema; in schema mode (format/decoder) select them from the attributes map instead, e.g. "
          + "attributes['source'] AS source");
    }
    List<String> columns = new ArrayList<>(names);
    if (tsAttr != null) {
      columns.add(tsCol);
    }
    for (String n : columns) {
      if (!NAME.matcher(n).matches()) {
        throw new IllegalArgumentException("pubsub-go: option attributeColumns/timestampColumn: '" + n + "' is not "
            + "a usable column name (no spaces, commas or backquotes); e.g. attributeColumns='source,region'");
      }
    }
    for (String n : columns) {
      boolean twice = columns.indexOf(n) != columns.lastIndexOf(n);
      if (twice || raw.contains(n)) {
        throw new IllegalArgumentException("pubsub-go: option attributeColumns/timestampColumn: column '" + n + "' "
            + (twice ? "is named twice" : "is already a column filled from the message") + "; the columns are "
            + String.join(", ", raw) + " plus the derived ones");
      }
    }
    return new AttributeColumns(names, tsAttr, tsCol);
  }

  StructType extend(StructType schema) {
    List<StructField> fields = new ArrayList<>(Arrays.asList(schema.fields()));
    for (String n : names) {
      fields.add(DataTypes.createStructField(n, DataTypes.StringType, true));
    }
    if (tsAttribute != null) {
      fields.add(DataTypes.createStructField(tsColumn, DataTypes.TimestampType, true));
    }
    return DataTypes.createStructType(fields);
  }

  /** Epoch microseconds of an attribute's value, or null when it is neither form. */
  static Long eventTime(String v) {
    if (MILLIS.matcher(v).matches()) {
      return Long.parseLong(v) * 1000;
    }
    String s = v.toUpperCase(Locale.ROOT);
    if (s.length() > 10 && s.charAt(10) == ' ') {
      s = s.substring(0, 10) + "T" + s.substring(11);
    }
    try {
      OffsetDateTime t = OffsetDateTime.parse(s, DateTimeFormatter.ISO_OFFSET_DATE_TIME);
      return Math.addExact(Math.multiplyExact(t.toEpochSecond(), 1_000_000L), t.getNano() / 1000);
    } catch (DateTimeParseException | ArithmeticException e) {
      return null;
    }
  }

  /** A task's appender: its own vectors, filled again for each batch. */
  final class Appender implements AutoCloseable {
    private OnHeapColumnVector[] vectors = new OnHeapColumnVector[0];
    private int capacity;
    long eventTimeErrors; // attribute present but neither form, or missing: the column is null there

    /** b with the derived columns after its own; valid until the next call. */
    ColumnarBatch add(ColumnarBatch b, int attributesOrdinal) {
      int n = b.numRows();
      if (n > capacity || vectors.length == 0) {
        close();
        capacity = Math.max(n, 1024);
        vectors = new OnHeapColumnVector[names.size() + (tsAttribute != null ? 1 : 0)];
        for (int i = 0; i < names.size(); i++) {
          vectors[i] = new OnHeapColumnVector(capacity, DataTypes.StringType);
        }
        if (tsAttribute != null) {
          vectors[names.size()] = new OnHeapColumnVector(capacity, DataTypes.TimestampType);
        }
      }
      for (OnHeapColumnVector v : vectors) {
        v.reset();
      }
      ColumnVector attrs = b.column(attributesOrdinal);
      for (int row = 0; row < n; row++) {
        ColumnarMap m = attrs.isNullAt(row) ? null : attrs.getMap(row);
        for (int i = 0; i < names.size(); i++) {
          UTF8String v = lookup(m, names.get(i));
          if (v == null) {
            vectors[i].putNull(row);
          } else {
            byte[] bytes = v.getBytes();
            vectors[i].putByteArray(row, bytes, 0, bytes.length);
          }
        }
        if (tsAttribute != null) {
          UTF8String v = lookup(m, tsAttribute);
          Long us = v == null ? null : eventTime(v.toString());
          if (us == null) {
            vectors[names.size()].putNull(row);
            eventTimeErrors++;
          } else {
            vectors[names.size()].putLong(row, us);
          }
        }
      }
      ColumnVector[] cols = new ColumnVector[b.numCols() + vectors.length];
      for (int i = 0; i < b.numCols(); i++) {
        cols[i] = b.column(i);
      }
      System.arraycopy(vectors, 0, cols, b.numCols(), vectors.length);
      return new ColumnarBatch(cols, n);
    }

    /** The first value of key (as pyarrow's map_lookup "first"), or null. */
    private UTF8String lookup(ColumnarMap m, String key) {
      if (m == null) {
        return null;
      }
      UTF8String k = UTF8String.fromString(key);
      for (int i = 0; i < m.numElements(); i++) {
        if (k.equals(m.keyArray().getUTF8String(i))) {
          return m.valueArray().isNullAt(i) ? null : m.valueArray().getUTF8String(i);
        }
      }
      return null;
    }

    @Override
    public void close() {
      for (OnHeapColumnVector v : vectors) {
        v.close();
      }
      vectors = new OnHeapColumnVector[0];
      capacity = 0;
    }
  }
}
