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
  private final ColumnarBatch batch;

  /** Takes ownership of the exported array at array (allocated by OffHeap). */
  CBatch(long array, long schema, StructType sparkSchema) {
    this.array = array;
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
    return batch;
  }

  public int numRows() {
    return batch.numRows();
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
