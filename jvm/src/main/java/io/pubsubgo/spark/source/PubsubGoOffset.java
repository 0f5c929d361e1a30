package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A micro-batch of the JVM source: its number and how it was planned
 * (tasks, rows per task, and the batch's row limit when there is one), so
 * a re-run of the batch after a driver restart plans the same tasks and
 * finds their batch-log entries. Pub/Sub has no offsets; the batch log
 * holds what each batch read.
 */
public final class PubsubGoOffset extends Offset {
  static final String FRONT_END = "jvm";
  private static final ObjectMapper JSON = new ObjectMapper();

  final long batch;
  final int partitions;
  final long rowsPerPartition;
  /** The batch's row limit (maxRecordsPerTrigger), split over its tasks; NO_LIMIT: none. */
  final long rows;
  static final long NO_LIMIT = -1;

  PubsubGoOffset(long batch, int partitions, long rowsPerPartition) {
    this(batch, partitions, rowsPerPartition, NO_LIMIT);
  }

  private PubsubGoOffset(long batch, int partitions, long rowsPerPartition, long rows) {
    this.batch = batch;
    this.partitions = partitions;
    this.rowsPerPartition = rowsPerPartition;
    this.rows = rows;
  }

  /**
   * The next batch under a row limit: the limit split over at most
   * partitions tasks (no task planned to read nothing), each capped at
   * rowsPerPartition, so the tasks' caps add up to the limit, never more.
   */
  static PubsubGoOffset limited(long batch, int partitions, long rowsPerPartition, long maxRows) {
    int tasks = (int) Math.max(1, Math.min(partitions, maxRows));
    long perTask = Math.min(rowsPerPartition, (maxRows + tasks - 1) / tasks);
    return new PubsubGoOffset(batch, tasks, perTask, Math.min(Math.max(1, maxRows), perTask * tasks));
  }

  /** Task i's row cap: its share of the limit (the first rows % partitions tasks one more), or rowsPerPartition. */
  long rowsOf(int i) {
    if (rows == NO_LIMIT) {
      return rowsPerPartition;
    }
    return rows / partitions + (i < rows % partitions ? 1 : 0);
  }

  @Override
  public String json() {
    return "{\"frontEnd\":\"" + FRONT_END + "\",\"batch\":" + batch + ",\"partitions\":" + partitions
        + ",\"rowsPerPartition\":" + rowsPerPartition + (rows == NO_LIMIT ? "" : ",\"rows\":" + rows) + "}";
  }

  /** Reads an offset this front end wrote; names the writer of any other. */
  static PubsubGoOffset parse(String json) {
    JsonNode n;
    try {
      n = JSON.readTree(json);
    } catch (IOException e) {
      throw new IllegalStateException("pubsub-go: the checkpoint's offset " + json + " is not JSON: " + e.getMessage());
    }
    if (!n.has("frontEnd") || !FRONT_END.equals(n.get("frontEnd").asText())) {
      throw new IllegalStateException("pubsub-go: this checkpoint was written by pubsub-go's Python front end "
          + "(offset " + json + "), and the JVM front end cannot continue it: run the query with the Python "
          + "front end (docs/jvm.md, \"Which front end runs\"), or start it on a new checkpointLocation");
    }
    return new PubsubGoOffset(n.get("batch").asLong(), n.get("partitions").asInt(), n.get("rowsPerPartition").asLong(),
        n.has("rows") ? n.get("rows").asLong() : NO_LIMIT);
  }
}
