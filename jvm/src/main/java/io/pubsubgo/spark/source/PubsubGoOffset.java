package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A micro-batch of the JVM source: its number and how it was planned
 * (tasks, rows per task, the batch's row and byte limits and the minimum
 * its tasks wait for when there are ones), so
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
  /** The batch's byte limit (maxBytesPerTrigger), split over its tasks; NO_LIMIT: none. */
  long bytes = NO_LIMIT;
  /** The minimum the batch waits for (minRecordsPerTrigger, minBytesPerTrigger), split over its tasks; NO_LIMIT: none. */
  long minRows = NO_LIMIT;
  long minBytes = NO_LIMIT;
  /** Until when (epoch ms) the tasks wait for their minimum (maxTriggerDelay from planning); 0: no minimum. */
  long waitUntilMs;

  PubsubGoOffset(long batch, int partitions, long rowsPerPartition) {
    this(batch, partitions, rowsPerPartition, NO_LIMIT);
  }

  private PubsubGoOffset(long batch, int partitions, long rowsPerPartition, long rows) {
    this.batch = batch;
    this.partitions = partitions;
    this.rowsPerPartition = rowsPerPartition;
    this.rows = rows;
  }

  /** This batch with a byte limit (NO_LIMIT: none). */
  PubsubGoOffset bytes(long maxBytes) {
    bytes = maxBytes;
    return this;
  }

  /** This batch waiting until waitUntil (epoch ms) for minRows rows and minBytes bytes (NO_LIMIT: no such minimum). */
  PubsubGoOffset minimum(long minRows, long minBytes, long waitUntil) {
    this.minRows = minRows;
    this.minBytes = minBytes;
    this.waitUntilMs = minRows == NO_LIMIT && minBytes == NO_LIMIT ? 0 : waitUntil;
    return this;
  }

  /** Task i's share of a per-batch figure; NO_LIMIT stays NO_LIMIT, a limit gives every task at least 1. */
  long shareOf(long total, int i) {
    if (total == NO_LIMIT) {
      return NO_LIMIT;
    }
    return Math.max(1, total / partitions + (i < total % partitions ? 1 : 0));
  }

  /** Task i's minimum of rows: its share, never over its row cap. */
  long minRowsOf(int i) {
    return minRows == NO_LIMIT ? NO_LIMIT : Math.min(rowsOf(i), shareOf(minRows, i));
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
        + ",\"rowsPerPartition\":" + rowsPerPartition + (rows == NO_LIMIT ? "" : ",\"rows\":" + rows)
        + (bytes == NO_LIMIT ? "" : ",\"bytes\":" + bytes) + (minRows == NO_LIMIT ? "" : ",\"minRows\":" + minRows)
        + (minBytes == NO_LIMIT ? "" : ",\"minBytes\":" + minBytes)
        + (waitUntilMs == 0 ? "" : ",\"waitUntilMs\":" + waitUntilMs) + "}";
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
        n.has("rows") ? n.get("rows").asLong() : NO_LIMIT).bytes(n.path("bytes").asLong(NO_LIMIT))
        .minimum(n.path("minRows").asLong(NO_LIMIT), n.path("minBytes").asLong(NO_LIMIT), n.path("waitUntilMs").asLong(0));
  }
}
