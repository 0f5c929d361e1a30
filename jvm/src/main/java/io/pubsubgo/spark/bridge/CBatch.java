package io.pubsubgo.spark.bridge;

import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.Platform;

/**
 * One record batch exported by the library (a struct ArrowArray in memory
 * this object allocated), seen by Spark as a {@link ColumnarBatch} over the
 * same C memory. {@link #close} calls the array's release callback, which
 * frees the buffers; the batch must not be read after that.
 */
public final class CBatch implements AutoCloseable {
  static final long ARRAY_SIZE = 80;

  private long array;
  private ColumnarBatch batch; // all the columns (after keepRows, of the kept rows)
  private final StructType sparkSchema;
  private ColumnarBatch view; // what Spark gets when not every column and row (schema mode)

  /** Takes ownership of the exported array at array (allocated by OffHeap). */
  CBatch(long array, long schema, StructType sparkSchema) {
    this.array = array;
    this.sparkSchema = sparkSchema;
    int rows = (int) Platform.getLong(null, array);
    long rootOffset = Platform.getLong(null, array + 16);
    long childArrays = Platform.getLong(null, array + 48);
    int n = sparkSchema.fields().length;
    ColumnVector[] cols = new ColumnVector[n];
    for (int i = 0; i < n; i++) {
      cols[i] = new CColumnVector(ArrowTypes.child(schema, i), Platform.getLong(null, childArrays + 8L * i), rootOffset, rows);
    }
    this.batch = new ColumnarBatch(cols, rows);
  }

  public ColumnarBatch columnar() {
    return view != null ? view : batch;
  }

  public int numRows() {
    return columnar().numRows();
  }

  /** The rows of all the batch's columns (before any {@link #select}). */
  public int allRows() {
    return batch.numRows();
  }

  /** The schema of all the batch's columns (before any {@link #select}). */
  public StructType schema() {
    return sparkSchema;
  }

  /** Column i of all the batch's columns (before any {@link #select}). */
  public ColumnVector column(int i) {
    return batch.column(i);
  }

  /**
   * From now on the batch is only the rows at rows (ascending indexes),
   * over the same C memory: its columns, row count and any later
   * {@link #select} see just those (idAttribute's dropped duplicates).
   */
  public void keepRows(int[] rows) {
    int n = batch.numCols();
    ColumnVector[] v = new ColumnVector[n];
    for (int i = 0; i < n; i++) {
      org.apache.spark.sql.types.DataType t = sparkSchema.fields()[i].dataType();
      v[i] = new RowMappedVector(batch.column(i), rows, t instanceof StructType ? ((StructType) t).fields().length : 0);
    }
    batch = new ColumnarBatch(v, rows.length);
    view = null;
  }

  /**
   * Hands Spark only the columns at cols (indexes into {@link #schema}),
   * and when rows is not null only those rows, over the same C memory.
   */
  public void select(int[] cols, int[] rows) {
    ColumnVector[] v = new ColumnVector[cols.length];
    for (int i = 0; i < cols.length; i++) {
      ColumnVector c = batch.column(cols[i]);
      if (rows == null) {
        v[i] = c;
      } else {
        org.apache.spark.sql.types.DataType t = sparkSchema.fields()[cols[i]].dataType();
        v[i] = new RowMappedVector(c, rows, t instanceof StructType ? ((StructType) t).fields().length : 0);
      }
    }
    view = new ColumnarBatch(v, rows == null ? batch.numRows() : rows.length);
  }

  @Override
  public void close() {
    if (array != 0) {
      Native.releaseArray(array);
      OffHeap.free(array);
      array = 0;
    }
  }
}
