package io.pubsubgo.spark.source;

import org.apache.spark.sql.connector.read.InputPartition;

/** One task of a micro-batch: what it pulls, or replays, and its bounds. */
final class PubsubGoPartition implements InputPartition {
  private static final long serialVersionUID = 1L;

  final long batch;
  final int index;
  /** The Go subscriber's config (the contract's subscriber_config), as JSON. */
  final String subscriberConfig;
  /** The batch log's directory (a Hadoop path) and the Hadoop conf to reach it. */
  final String logDir;
  final SerializableConf hadoopConf;
  final long maxRows;
  final int batchSize;
  final long maxDurationMs;
  final long waitMs;
  final long quietMs;
  final boolean untilQuiet; // AvailableNow: read until the backlog is empty, not until a wait runs out
  final int commitLeaseSeconds;
  /** Admission control's share of this task (PubsubGoOffset.NO_LIMIT: none): its byte cap and minimum. */
  long maxBytes = PubsubGoOffset.NO_LIMIT;
  long minRows = PubsubGoOffset.NO_LIMIT;
  long minBytes = PubsubGoOffset.NO_LIMIT;
  long waitUntilMs; // epoch ms the task may wait until for its minimum; 0: none
  /** false (ackOnCommit): the task acks its rows once its entry is published, not the driver at commit. */
  boolean ackOnCommit = true;
  /** How long the executor keeps the task's subscriber for the query's next task (subscriberIdleMs). */
  long subscriberIdleMs;
  /** streamsPerPartition: a subscriber with more has grown to catch up (CatchUp). */
  int streamsPerPartition;
  /** idAttribute's window; null: none. */
  IdWindow idWindow;
  /** Schema mode: onDecodeError and the output's columns; null in raw mode. */
  SchemaMode schemaMode;
  /** Raw mode's attribute-derived columns; null: none. */
  AttributeColumns derived;

  PubsubGoPartition(long batch, int index, String subscriberConfig, String logDir, SerializableConf hadoopConf,
      long maxRows, int batchSize, long maxDurationMs, long waitMs, long quietMs, boolean untilQuiet,
      int commitLeaseSeconds) {
    this.batch = batch;
    this.index = index;
    this.subscriberConfig = subscriberConfig;
    this.logDir = logDir;
    this.hadoopConf = hadoopConf;
    this.maxRows = maxRows;
    this.batchSize = batchSize;
    this.maxDurationMs = maxDurationMs;
    this.waitMs = waitMs;
    this.quietMs = quietMs;
    this.untilQuiet = untilQuiet;
    this.commitLeaseSeconds = commitLeaseSeconds;
  }

  void admit(long maxBytes, long minRows, long minBytes, long waitUntilMs) {
    this.maxBytes = maxBytes;
    this.minRows = minRows;
    this.minBytes = minBytes;
    this.waitUntilMs = waitUntilMs;
  }
}
