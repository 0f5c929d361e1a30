package io.pubsubgo.spark.bridge;

import java.math.BigInteger;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark column over an Arrow C Data array where it lies in C memory: no
 * copy, no Arrow Java (whose version differs per Spark line), strings
 * handed to Spark as {@link UTF8String}s over the same bytes. The memory
 * belongs to the batch ({@link CBatch}), which releases it; a vector must
 * not be read after that.
 *
 * <p>Offsets in struct ArrowArray (64-bit): length 0, null_count 8, offset
 * 16, n_buffers 24, n_children 32, buffers 40, children 48.
 */
final class CColumnVector extends ColumnVector {
  private final char kind;   // the physical layout, from the format
  private final long base;   // index of logical row 0 in the buffers
  private final int rows;
  private final long validity;
  private final long values; // values, or offsets for variable-size kinds
  private final long data;   // variable-size data
  private final int unitDiv; // timestamps: divisor to microseconds (or -multiplier)
  private final CColumnVector[] children;
  private int nulls = -1;

  /**
   * @param inherited the parent struct's own index of row 0 (a struct's
   *     children are indexed by the struct's rows)
   */
  CColumnVector(long schema, long array, long inherited, int rows) {
    super(ArrowTypes.sparkType(schema));
    String f = ArrowTypes.format(schema);
    this.rows = rows;
    this.base = Platform.getLong(null, array + 16) + inherited;
    long buffers = Platform.getLong(null, array + 40);
    long nBuffers = Platform.getLong(null, array + 24);
    this.validity = nBuffers > 0 ? Platform.getLong(null, buffers) : 0;
    this.values = nBuffers > 1 ? Platform.getLong(null, buffers + 8) : 0;
    this.data = nBuffers > 2 ? Platform.getLong(null, buffers + 16) : 0;
    this.kind = kindOf(f);
    this.unitDiv = f.startsWith("ts") ? unit(f.charAt(2)) : 1;
    long childArrays = Platform.getLong(null, array + 48);
    int n = (int) Platform.getLong(null, array + 32);
    children = new CColumnVector[n];
    for (int i = 0; i < n; i++) {
      long cs = ArrowTypes.child(schema, i);
      long ca = Platform.getLong(null, childArrays + 8L * i);
      if (kind == 'S') {
        children[i] = new CColumnVector(cs, ca, base, rows);
      } else { // list and map children are indexed by their offsets
        children[i] = new CColumnVector(cs, ca, 0, (int) Platform.getLong(null, ca));
      }
    }
    if (kind == 'M') { // map: the entries struct's key and value
      CColumnVector entries = children[0];
      children[0] = entries.children[0];
      this.mapValues = entries.children[1];
    } else {
      this.mapValues = null;
    }
  }

  private final CColumnVector mapValues;

  private static char kindOf(String f) {
    switch (f) {
      case "n": return 'n';
      case "b": return 'b';
      case "c": return '1';
      case "s": return '2';
      case "i": case "tdD": return '4';
      case "l": return '8';
      case "f": return 'f';
      case "g": return 'g';
      case "u": case "z": return 'v';
      case "U": case "Z": return 'V';
      case "+l": return 'l';
      case "+L": return 'L';
      case "+m": return 'M';
      case "+s": return 'S';
      default:
    }
    if (f.startsWith("ts")) {
      return 't';
    }
    if (f.startsWith("d:")) {
      return 'd';
    }
    throw new UnsupportedOperationException("pubsub-go: Arrow type " + f + " is not supported");
  }

  /** Timestamps: what a value is divided by for microseconds (negative: multiplied). */
  private static int unit(char u) {
    switch (u) {
      case 's': return -1_000_000;
      case 'm': return -1_000;
      case 'u': return 1;
      case 'n': return 1_000;
      default: throw new UnsupportedOperationException("pubsub-go: timestamp unit " + u);
    }
  }

  @Override
  public void close() {
    // The batch owns the memory (CBatch.close).
  }

  @Override
  public boolean hasNull() {
    return numNulls() > 0;
  }

  @Override
  public int numNulls() {
    if (nulls < 0) {
      int n = 0;
      if (kind == 'n') {
        n = rows;
      } else if (validity != 0) {
        for (int i = 0; i < rows; i++) {
          if (isNullAt(i)) {
            n++;
          }
        }
      }
      nulls = n;
    }
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    if (kind == 'n') {
      return true;
    }
    if (validity == 0) {
      return false;
    }
    long i = base + rowId;
    return (Platform.getByte(null, validity + (i >>> 3)) & (1 << (i & 7))) == 0;
  }

  @Override
  public boolean getBoolean(int rowId) {
    long i = base + rowId;
    return (Platform.getByte(null, values + (i >>> 3)) & (1 << (i & 7))) != 0;
  }

  @Override
  public byte getByte(int rowId) {
    return Platform.getByte(null, values + base + rowId);
  }

  @Override
  public short getShort(int rowId) {
    return Platform.getShort(null, values + 2 * (base + rowId));
  }

  @Override
  public int getInt(int rowId) {
    return Platform.getInt(null, values + 4 * (base + rowId));
  }

  @Override
  public long getLong(int rowId) {
    long v = Platform.getLong(null, values + 8 * (base + rowId));
    if (kind == 't' && unitDiv != 1) {
      return unitDiv > 0 ? Math.floorDiv(v, unitDiv) : v * -unitDiv;
    }
    return v;
  }

  @Override
  public float getFloat(int rowId) {
    return Platform.getFloat(null, values + 4 * (base + rowId));
  }

  @Override
  public double getDouble(int rowId) {
    return Platform.getDouble(null, values + 8 * (base + rowId));
  }

  private long start(long i) {
    return kind == 'V' || kind == 'L' ? Platform.getLong(null, values + 8 * i) : Platform.getInt(null, values + 4 * i);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    long i = base + rowId;
    long s = start(i);
    return UTF8String.fromAddress(null, data + s, (int) (start(i + 1) - s));
  }

  @Override
  public byte[] getBinary(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    long i = base + rowId;
    long s = start(i);
    return OffHeap.bytes(data + s, start(i + 1) - s);
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    if (isNullAt(rowId)) {
      return null;
    }
    long at = values + 16 * (base + rowId);
    long lo = Platform.getLong(null, at);
    long hi = Platform.getLong(null, at + 8);
    if (precision <= Decimal.MAX_LONG_DIGITS()) {
      return Decimal.createUnsafe(lo, precision, scale);
    }
    byte[] be = new byte[16];
    for (int b = 0; b < 8; b++) {
      be[15 - b] = (byte) (lo >>> (8 * b));
      be[7 - b] = (byte) (hi >>> (8 * b));
    }
    return Decimal.apply(new java.math.BigDecimal(new BigInteger(be), scale), precision, scale);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    long i = base + rowId;
    long s = start(i);
    return new ColumnarArray(children[0], (int) s, (int) (start(i + 1) - s));
  }

  @Override
  public ColumnarMap getMap(int ordinal) {
    if (isNullAt(ordinal)) {
      return null;
    }
    long i = base + ordinal;
    int s = (int) start(i);
    return new ColumnarMap(children[0], mapValues, s, (int) start(i + 1) - s);
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    return children[ordinal];
  }

  DataType type() {
    return dataType();
  }
}
