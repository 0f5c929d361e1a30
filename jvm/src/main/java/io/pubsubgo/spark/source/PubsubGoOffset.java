package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A micro-batch of the JVM source: its number and how it was planned
 * (tasks, rows per task), so a re-run of the batch after a driver restart
 * plans the same tasks and finds their batch-log entries. Pub/Sub has no
 * offsets; the batch log holds what each batch read.
 */
public final class PubsubGoOffset extends Offset {
  static final String FRONT_END = "jvm";
  private static final ObjectMapper JSON = new ObjectMapper();

  final long batch;
  final int partitions;
  final long rowsPerPartition;

  PubsubGoOffset(long batch, int partitions, long rowsPerPartition) {
    this.batch = batch;
    this.partitions = partitions;
    this.rowsPerPartition = rowsPerPartition;
  }

  @Override
  public String json() {
    return "{\"frontEnd\":\"" + FRONT_END + "\",\"batch\":" + batch + ",\"partitions\":" + partitions
        + ",\"rowsPerPartition\":" + rowsPerPartition + "}";
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
    return new PubsubGoOffset(n.get("batch").asLong(), n.get("partitions").asInt(), n.get("rowsPerPartition").asLong());
  }
}
