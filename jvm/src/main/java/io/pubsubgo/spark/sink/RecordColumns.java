package io.pubsubgo.spark.sink;

import io.pubsubgo.spark.bridge.OffHeap;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * schemaFrom=topic: the record's columns (every input column but the
 * message's own) laid out as Arrow arrays in off-heap memory, for the Go
 * publisher's encoder (go/internal/encode) to encode into each payload in
 * the topic's schema, as the Python sink hands it Spark's Arrow batches.
 * Go learns the types from the columns' Spark schema JSON (turned into
 * Arrow as go/capi/jni_schema.go does for the source) and the buffers from
 * a node list: 4 int64s per Arrow node in preorder, its length, validity
 * bitmap and first and second buffers (go/capi/jni_publish.go, nodeData).
 */
final class RecordColumns implements AutoCloseable {
  private final int[] ordinals;
  private final Node[] top;
  private final List<Node> preorder = new ArrayList<>();
  private final long schemaJson;
  private long nodes;

  /** Whether the sink lays out this type (and so Go can read it). */
  static boolean supported(DataType t) {
    if (t instanceof StructType) {
      for (StructField f : ((StructType) t).fields()) {
        if (!supported(f.dataType())) {
          return false;
        }
      }
      return true;
    }
    if (t instanceof ArrayType) {
      return supported(((ArrayType) t).elementType());
    }
    if (t instanceof MapType) {
      return supported(((MapType) t).keyType()) && supported(((MapType) t).valueType());
    }
    return t instanceof BooleanType || t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType
        || t instanceof LongType || t instanceof FloatType || t instanceof DoubleType || t instanceof StringType
        || t instanceof BinaryType || t instanceof DateType || t instanceof TimestampType
        || t instanceof TimestampNTZType || t instanceof DecimalType;
  }

  /** fields: the record's columns, at ordinals of the input row. */
  RecordColumns(StructType fields, int[] ordinals) {
    this.ordinals = ordinals;
    StructField[] fs = fields.fields();
    top = new Node[fs.length];
    for (int i = 0; i < fs.length; i++) {
      top[i] = node(fs[i].dataType());
    }
    schemaJson = OffHeap.cString(fields.json());
    nodes = OffHeap.calloc(32L * Math.max(1, preorder.size()));
  }

  private Node node(DataType t) {
    Node n = new Node(t);
    preorder.add(n);
    if (t instanceof StructType) {
      StructField[] fs = ((StructType) t).fields();
      n.children = new Node[fs.length];
      for (int i = 0; i < fs.length; i++) {
        n.children[i] = node(fs[i].dataType());
      }
    } else if (t instanceof ArrayType) {
      n.children = new Node[] {node(((ArrayType) t).elementType())};
    } else if (t instanceof MapType) {
      // Arrow's map: a list of an entries struct (no validity) of key and value.
      Node entries = new Node(null);
      preorder.add(entries);
      entries.children = new Node[] {node(((MapType) t).keyType()), node(((MapType) t).valueType())};
      n.children = new Node[] {entries};
    }
    return n;
  }

  void append(SpecializedGetters row) {
    for (int i = 0; i < top.length; i++) {
      top[i].append(row, ordinals[i]);
    }
  }

  long bytes() {
    long b = 0;
    for (Node n : preorder) {
      b += n.b1.len + (n.b2 != null ? n.b2.len : 0);
    }
    return b;
  }

  void reset() {
    for (Node n : preorder) {
      n.reset();
    }
  }

  long schemaJson() {
    return schemaJson;
  }

  /** The node list of the rows appended since the last reset. */
  long nodes() {
    for (int i = 0; i < preorder.size(); i++) {
      Node n = preorder.get(i);
      long at = nodes + 32L * i;
      Platform.putLong(null, at, n.length);
      Platform.putLong(null, at + 8, n.valid != null ? n.valid.addr : 0);
      Platform.putLong(null, at + 16, n.b1.addr);
      Platform.putLong(null, at + 24, n.b2 != null ? n.b2.addr : 0);
    }
    return nodes;
  }

  @Override
  public void close() {
    for (Node n : preorder) {
      n.close();
    }
    OffHeap.free(schemaJson);
    OffHeap.free(nodes);
    nodes = 0;
  }

  /** One Arrow array being filled: validity, and values, or offsets and data. */
  private static final class Node {
    final DataType type; // null: a map's entries struct
    final OffHeapBuffer valid;
    final OffHeapBuffer b1;
    final OffHeapBuffer b2;
    final boolean offsets;
    Node[] children;
    long length;

    Node(DataType t) {
      type = t;
      valid = t == null ? null : new OffHeapBuffer(256);
      offsets = t instanceof StringType || t instanceof BinaryType || t instanceof ArrayType || t instanceof MapType;
      b1 = new OffHeapBuffer(t == null || t instanceof StructType ? 64 : 1 << 12);
      b2 = t instanceof StringType || t instanceof BinaryType ? new OffHeapBuffer(1 << 14) : null;
      reset();
    }

    void reset() {
      length = 0;
      if (valid != null) {
        valid.reset();
      }
      b1.reset();
      if (b2 != null) {
        b2.reset();
      }
      if (offsets) {
        b1.putInt(0);
      }
      if (children != null) {
        for (Node c : children) {
          c.reset();
        }
      }
    }

    /** Appends src's value at ordinal i (a row's column, an array's element). */
    void append(SpecializedGetters src, int i) {
      boolean isNull = src.isNullAt(i);
      long r = length++;
      valid.setBit(r, !isNull);
      DataType t = type;
      if (t instanceof StructType) {
        int nf = children.length;
        if (isNull) {
          for (Node c : children) {
            c.appendNull();
          }
        } else {
          SpecializedGetters s = src.getStruct(i, nf);
          for (int k = 0; k < nf; k++) {
            children[k].append(s, k);
          }
        }
      } else if (t instanceof ArrayType) {
        Node e = children[0];
        if (!isNull) {
          org.apache.spark.sql.catalyst.util.ArrayData a = src.getArray(i);
          for (int k = 0; k < a.numElements(); k++) {
            e.append(a, k);
          }
        }
        b1.putInt(offset(e.length));
      } else if (t instanceof MapType) {
        Node entries = children[0];
        if (!isNull) {
          org.apache.spark.sql.catalyst.util.MapData m = src.getMap(i);
          org.apache.spark.sql.catalyst.util.ArrayData ks = m.keyArray();
          org.apache.spark.sql.catalyst.util.ArrayData vs = m.valueArray();
          for (int k = 0; k < m.numElements(); k++) {
            entries.children[0].append(ks, k);
            entries.children[1].append(vs, k);
            entries.length++;
          }
        }
        b1.putInt(offset(entries.length));
      } else if (t instanceof StringType) {
        if (!isNull) {
          UTF8String s = src.getUTF8String(i);
          b2.put(s.getBaseObject(), s.getBaseOffset(), s.numBytes());
        }
        b1.putInt(offset(b2.len));
      } else if (t instanceof BinaryType) {
        if (!isNull) {
          byte[] b = src.getBinary(i);
          b2.put(b, Platform.BYTE_ARRAY_OFFSET, b.length);
        }
        b1.putInt(offset(b2.len));
      } else if (t instanceof BooleanType) {
        b1.setBit(r, !isNull && src.getBoolean(i));
      } else if (t instanceof ByteType) {
        b1.ensure(1);
        Platform.putByte(null, b1.addr + b1.len, isNull ? 0 : src.getByte(i));
        b1.len += 1;
      } else if (t instanceof ShortType) {
        b1.ensure(2);
        Platform.putShort(null, b1.addr + b1.len, isNull ? 0 : src.getShort(i));
        b1.len += 2;
      } else if (t instanceof IntegerType || t instanceof DateType) {
        b1.putInt(isNull ? 0 : src.getInt(i));
      } else if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
        b1.putLong(isNull ? 0 : src.getLong(i));
      } else if (t instanceof FloatType) {
        b1.putInt(isNull ? 0 : Float.floatToRawIntBits(src.getFloat(i)));
      } else if (t instanceof DoubleType) {
        b1.putLong(isNull ? 0 : Double.doubleToRawLongBits(src.getDouble(i)));
      } else if (t instanceof DecimalType) {
        DecimalType d = (DecimalType) t;
        java.math.BigInteger v = isNull ? java.math.BigInteger.ZERO
            : src.getDecimal(i, d.precision(), d.scale()).toJavaBigDecimal().unscaledValue();
        // Arrow's decimal128: 16 bytes, two's complement, little-endian (x86, aarch64).
        b1.putLong(v.longValue());
        b1.putLong(v.shiftRight(64).longValue());
      } else {
        throw new IllegalStateException("pubsub-go: no Arrow layout for " + t.simpleString());
      }
    }

    /** A null struct's children still take a slot each (Arrow: same length as the parent). */
    void appendNull() {
      long r = length++;
      valid.setBit(r, false);
      DataType t = type;
      if (t instanceof StructType) {
        for (Node c : children) {
          c.appendNull();
        }
      } else if (t instanceof ArrayType) {
        b1.putInt(offset(children[0].length));
      } else if (t instanceof MapType) {
        b1.putInt(offset(children[0].length));
      } else if (t instanceof StringType || t instanceof BinaryType) {
        b1.putInt(offset(b2.len));
      } else if (t instanceof BooleanType) {
        b1.setBit(r, false);
      } else {
        int w = t instanceof ByteType ? 1 : t instanceof ShortType ? 2
            : t instanceof IntegerType || t instanceof DateType || t instanceof FloatType ? 4
            : t instanceof DecimalType ? 16 : 8;
        b1.ensure(w);
        Platform.setMemory(b1.addr + b1.len, (byte) 0, w);
        b1.len += w;
      }
    }

    private static int offset(long v) {
      if (v > Integer.MAX_VALUE) {
        throw new IllegalStateException("pubsub-go: a column of one batch passed 2 GiB");
      }
      return (int) v;
    }

    void close() {
      if (valid != null) {
        valid.close();
      }
      b1.close();
      if (b2 != null) {
        b2.close();
      }
    }
  }
}
