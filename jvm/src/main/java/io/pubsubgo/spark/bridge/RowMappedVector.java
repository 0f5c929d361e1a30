package io.pubsubgo.spark.bridge;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Some rows of a column, in the order of a row map, read where they lie:
 * a batch without the rows that went to the dead-letter topic, with no
 * copy of the others. A struct's children are mapped the same way; an
 * array's or a map's elements are read through the original column.
 */
final class RowMappedVector extends ColumnVector {
  private final ColumnVector in;
  private final int[] rows;
  private final RowMappedVector[] children;

  RowMappedVector(ColumnVector in, int[] rows, int nChildren) {
    super(in.dataType());
    this.in = in;
    this.rows = rows;
    this.children = new RowMappedVector[nChildren];
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
    int n = 0;
    for (int r : rows) {
      if (in.isNullAt(r)) {
        n++;
      }
    }
    return n;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return in.isNullAt(rows[rowId]);
  }

  @Override
  public boolean getBoolean(int rowId) {
    return in.getBoolean(rows[rowId]);
  }

  @Override
  public byte getByte(int rowId) {
    return in.getByte(rows[rowId]);
  }

  @Override
  public short getShort(int rowId) {
    return in.getShort(rows[rowId]);
  }

  @Override
  public int getInt(int rowId) {
    return in.getInt(rows[rowId]);
  }

  @Override
  public long getLong(int rowId) {
    return in.getLong(rows[rowId]);
  }

  @Override
  public float getFloat(int rowId) {
    return in.getFloat(rows[rowId]);
  }

  @Override
  public double getDouble(int rowId) {
    return in.getDouble(rows[rowId]);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    return in.getArray(rows[rowId]);
  }

  @Override
  public ColumnarMap getMap(int ordinal) {
    return in.getMap(rows[ordinal]);
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    return in.getDecimal(rows[rowId], precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    return in.getUTF8String(rows[rowId]);
  }

  @Override
  public byte[] getBinary(int rowId) {
    return in.getBinary(rows[rowId]);
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    if (children[ordinal] == null) {
      ColumnVector c = in.getChild(ordinal);
      int n = c.dataType() instanceof org.apache.spark.sql.types.StructType
          ? ((org.apache.spark.sql.types.StructType) c.dataType()).fields().length : 0;
      children[ordinal] = new RowMappedVector(c, rows, n);
    }
    return children[ordinal];
  }
}
