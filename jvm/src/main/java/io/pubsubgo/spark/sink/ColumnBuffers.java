package io.pubsubgo.spark.sink;

import io.pubsubgo.spark.bridge.OffHeap;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A task's rows laid out as Arrow columns in off-heap memory, for the Go
 * publisher to read where they lie (go/capi/jni_publish.go): the payload,
 * and the optional ordering_key, attributes and event-time columns. A
 * string is copied once, from Spark's row into its column; the publisher
 * copies it once more, into the message's wire form.
 */
final class ColumnBuffers implements AutoCloseable {
  // The descriptor's slots, as go/capi/jni_publish.go numbers them.
  private static final int ROWS = 0;
  private static final int PAYLOAD_OFFSETS = 1;
  private static final int PAYLOAD_DATA = 2;
  private static final int PAYLOAD_IS_STRING = 3;
  private static final int KEY_VALIDITY = 4;
  private static final int KEY_OFFSETS = 5;
  private static final int KEY_DATA = 6;
  private static final int ATTR_VALIDITY = 7;
  private static final int ATTR_OFFSETS = 8;
  private static final int ATTR_KEY_OFFSETS = 9;
  private static final int ATTR_KEY_DATA = 10;
  private static final int ATTR_VAL_VALIDITY = 11;
  private static final int ATTR_VAL_OFFSETS = 12;
  private static final int ATTR_VAL_DATA = 13;
  private static final int TIME_VALIDITY = 14;
  private static final int TIME_VALUES = 15;
  private static final int TIME_NAME = 16;
  private static final int PAYLOAD_VALIDITY = 17;
  private static final int FIELDS_SCHEMA = 18;
  private static final int FIELDS_NODES = 19;
  private static final int SLOTS = 20;

  private final InputColumns in;
  private final long desc = OffHeap.calloc(8L * SLOTS);
  private final long timeName;
  private final OffHeapBuffer payloadValid = new OffHeapBuffer(1 << 10);
  private final OffHeapBuffer payloadOffsets = new OffHeapBuffer(1 << 14);
  private final OffHeapBuffer payloadData = new OffHeapBuffer(1 << 20);
  private final OffHeapBuffer keyValid = new OffHeapBuffer(1 << 10);
  private final OffHeapBuffer keyOffsets = new OffHeapBuffer(1 << 14);
  private final OffHeapBuffer keyData = new OffHeapBuffer(1 << 14);
  private final OffHeapBuffer attrValid = new OffHeapBuffer(1 << 10);
  private final OffHeapBuffer attrOffsets = new OffHeapBuffer(1 << 14);
  private final OffHeapBuffer attrKeyOffsets = new OffHeapBuffer(1 << 14);
  private final OffHeapBuffer attrKeyData = new OffHeapBuffer(1 << 16);
  private final OffHeapBuffer attrValValid = new OffHeapBuffer(1 << 10);
  private final OffHeapBuffer attrValOffsets = new OffHeapBuffer(1 << 14);
  private final OffHeapBuffer attrValData = new OffHeapBuffer(1 << 16);
  private final OffHeapBuffer timeValid = new OffHeapBuffer(1 << 10);
  private final OffHeapBuffer timeValues = new OffHeapBuffer(1 << 14);
  /** schemaFrom=topic: the columns the publisher encodes into the payload; else null. */
  private final RecordColumns record;
  private int rows;
  private int entries;

  ColumnBuffers(InputColumns in) {
    this.in = in;
    this.timeName = in.time >= 0 ? OffHeap.cString(in.timeName) : 0;
    this.record = in.recordFields != null ? new RecordColumns(in.recordFields, in.recordOrdinals) : null;
    reset();
  }

  int rows() {
    return rows;
  }

  long bytes() {
    return payloadData.len + attrKeyData.len + attrValData.len + keyData.len + (record != null ? record.bytes() : 0);
  }

  void reset() {
    for (OffHeapBuffer b : new OffHeapBuffer[] {payloadValid, payloadOffsets, payloadData, keyValid, keyOffsets,
        keyData, attrValid, attrOffsets, attrKeyOffsets, attrKeyData, attrValValid, attrValOffsets, attrValData,
        timeValid, timeValues}) {
      b.reset();
    }
    payloadOffsets.putInt(0);
    keyOffsets.putInt(0);
    attrOffsets.putInt(0);
    attrKeyOffsets.putInt(0);
    attrValOffsets.putInt(0);
    rows = 0;
    entries = 0;
    if (record != null) {
      record.reset();
    }
  }

  void append(InternalRow row) {
    int r = rows;
    if (record != null) {
      record.append(row);
    } else {
      boolean payloadNull = row.isNullAt(in.payload);
      payloadValid.setBit(r, !payloadNull);
      if (!payloadNull) {
        if (in.payloadIsString) {
          putString(payloadData, row.getUTF8String(in.payload));
        } else {
          putBinary(payloadData, row, in.payload);
        }
      }
      payloadOffsets.putInt(checkedEnd(payloadData, "payload"));
    }
    if (in.orderingKey >= 0) {
      boolean isNull = row.isNullAt(in.orderingKey);
      keyValid.setBit(r, !isNull);
      if (!isNull) {
        putString(keyData, row.getUTF8String(in.orderingKey));
      }
      keyOffsets.putInt(checkedEnd(keyData, "ordering_key"));
    }
    if (in.attributes >= 0) {
      boolean isNull = row.isNullAt(in.attributes);
      attrValid.setBit(r, !isNull);
      if (!isNull) {
        MapData m = row.getMap(in.attributes);
        ArrayData ks = m.keyArray();
        ArrayData vs = m.valueArray();
        for (int i = 0; i < m.numElements(); i++) {
          putString(attrKeyData, ks.getUTF8String(i));
          attrKeyOffsets.putInt(checkedEnd(attrKeyData, "attributes"));
          boolean vNull = vs.isNullAt(i);
          attrValValid.setBit(entries, !vNull);
          if (!vNull) {
            putString(attrValData, vs.getUTF8String(i));
          }
          attrValOffsets.putInt(checkedEnd(attrValData, "attributes"));
          entries++;
        }
      }
      attrOffsets.putInt(entries);
    }
    if (in.time >= 0) {
      boolean isNull = row.isNullAt(in.time);
      timeValid.setBit(r, !isNull);
      timeValues.putLong(isNull ? 0 : row.getLong(in.time));
    }
    rows++;
  }

  /**
   * A binary value, copied straight from an UnsafeRow (what Spark's plans
   * hand a writer) instead of through the new array getBinary makes of it
   * for every row.
   */
  private static void putBinary(OffHeapBuffer b, InternalRow row, int ordinal) {
    if (row instanceof UnsafeRow) {
      UnsafeRow u = (UnsafeRow) row;
      long offsetAndSize = u.getLong(ordinal); // UnsafeRow's layout of a variable-length value
      b.put(u.getBaseObject(), u.getBaseOffset() + (offsetAndSize >>> 32), (int) offsetAndSize);
      return;
    }
    byte[] v = row.getBinary(ordinal);
    b.put(v, Platform.BYTE_ARRAY_OFFSET, v.length);
  }

  private static void putString(OffHeapBuffer b, UTF8String s) {
    b.put(s.getBaseObject(), s.getBaseOffset(), s.numBytes());
  }

  /** The buffer's length as an Arrow int32 offset (a batch is published well before 2 GiB). */
  private static int checkedEnd(OffHeapBuffer b, String column) {
    if (b.len > Integer.MAX_VALUE) {
      throw new IllegalStateException("pubsub-go: the " + column + " column of one batch passed 2 GiB");
    }
    return (int) b.len;
  }

  /** The descriptor of the rows appended since the last reset. */
  long descriptor() {
    slot(ROWS, rows);
    boolean payload = record == null;
    slot(PAYLOAD_VALIDITY, payload ? payloadValid.addr : 0);
    slot(PAYLOAD_OFFSETS, payload ? payloadOffsets.addr : 0);
    slot(PAYLOAD_DATA, payload ? payloadData.addr : 0);
    slot(FIELDS_SCHEMA, payload ? 0 : record.schemaJson());
    slot(FIELDS_NODES, payload ? 0 : record.nodes());
    slot(PAYLOAD_IS_STRING, in.payloadIsString ? 1 : 0);
    boolean key = in.orderingKey >= 0;
    slot(KEY_VALIDITY, key ? keyValid.addr : 0);
    slot(KEY_OFFSETS, key ? keyOffsets.addr : 0);
    slot(KEY_DATA, key ? keyData.addr : 0);
    boolean attrs = in.attributes >= 0;
    slot(ATTR_VALIDITY, attrs ? attrValid.addr : 0);
    slot(ATTR_OFFSETS, attrs ? attrOffsets.addr : 0);
    slot(ATTR_KEY_OFFSETS, attrs ? attrKeyOffsets.addr : 0);
    slot(ATTR_KEY_DATA, attrs ? attrKeyData.addr : 0);
    slot(ATTR_VAL_VALIDITY, attrs ? attrValValid.addr : 0);
    slot(ATTR_VAL_OFFSETS, attrs ? attrValOffsets.addr : 0);
    slot(ATTR_VAL_DATA, attrs ? attrValData.addr : 0);
    boolean time = in.time >= 0;
    slot(TIME_VALIDITY, time ? timeValid.addr : 0);
    slot(TIME_VALUES, time ? timeValues.addr : 0);
    slot(TIME_NAME, timeName);
    return desc; // every bitmap covers its rows: append set a bit for each
  }

  private void slot(int i, long v) {
    Platform.putLong(null, desc + 8L * i, v);
  }

  @Override
  public void close() {
    for (OffHeapBuffer b : new OffHeapBuffer[] {payloadValid, payloadOffsets, payloadData, keyValid, keyOffsets,
        keyData, attrValid, attrOffsets, attrKeyOffsets, attrKeyData, attrValValid, attrValOffsets, attrValData,
        timeValid, timeValues}) {
      b.close();
    }
    OffHeap.free(desc);
    OffHeap.free(timeName);
    if (record != null) {
      record.close();
    }
  }
}
