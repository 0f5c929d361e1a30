package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The JVM source's options, parsed once on the driver with errors that
 * name the option and what would be right. Names, aliases, defaults and
 * ranges come from the option table both front ends read (OptionTable);
 * what is here is which of them this front end supports so far, and the
 * defaults that are worked out rather than stated.
 */
final class SourceOptions {
  /** The options of the table this front end reads (docs/jvm.md, "Options"). */
  static final List<String> SUPPORTED = supported("subscriptionId", "projectId", "emulatorHost", "endpoint",
      "credentials", "credentialsJson", "impersonateServiceAccount", "iamCredentialsEndpoint", "numPartitions", "batchSize", "maxWaitTimeMs",
      "maxBatchDurationMs", "quietPeriodMs", "maxRecordsPerPartition", "maxRecordsPerTrigger", "maxBytesPerTrigger",
      "maxBytesPerPartition", "maxOutstandingMessages", "minRecordsPerTrigger", "minBytesPerTrigger", "maxTriggerDelay", "ackOnCommit",
      "subscriberIdleMs", "streamsPerPartition", "catchUpStreamsPerPartition", "ackDeadlineSeconds",
      "commitLeaseSeconds", "batchLogLocation", "attributeColumns", "timestampAttribute",
      "timestampColumn", "topicId", "filter", "messageRetentionSeconds",
      "subscriptionDeadLetterTopicId", "maxDeliveryAttempts", "enableExactlyOnceDelivery", "enableMessageOrdering",
      "retainAckedMessages", "deleteSubscriptionOnStreamStop", "startingTimestamp", "startingSnapshot",
      "idAttribute", "idAttributeWindowSeconds");

  private static List<String> supported(String... names) {
    List<String> out = new java.util.ArrayList<>(Arrays.asList(names));
    out.addAll(DecodeOptions.NAMES); // schema mode
    return out;
  }

  final String subscription;
  final String emulatorHost;
  final String endpoint;
  final String credentialsFile;
  final String credentialsJson; // a secret: only ever in the library's config, never in an error or toString
  final String impersonateServiceAccount;
  final String iamCredentialsEndpoint;
  final int numPartitions; // 0: Spark's default parallelism
  final int batchSize;
  final long maxWaitTimeMs;
  final long maxBatchDurationMs;
  final long quietPeriodMs;
  final long maxRecordsPerPartition;
  final Long maxRecordsPerTrigger; // null: no limit
  final Long maxBytesPerTrigger; // null: no limit
  final Long maxBytesPerPartition; // null: the library's flow control default
  final Long maxOutstandingMessages; // null: sized to what a task may hand out (subscriberConfig)
  final Long minRecordsPerTrigger; // null: no minimum
  final Long minBytesPerTrigger; // null: no minimum
  final long maxTriggerDelayMs; // how long a micro-batch waits for its minimum
  final int streamsPerPartition;
  final int catchUpStreamsPerPartition;
  final int ackDeadlineSeconds;
  final int commitLeaseSeconds;
  final boolean ackOnCommit; // false: a task acks its rows once its batch-log entry is published
  final long subscriberIdleMs; // streaming; AvailableNow closes a task's subscriber at its end
  final String batchLogLocation; // null: under the checkpoint
  final DecodeOptions decode; // schema mode; null: raw mode
  final AttributeColumns derived; // raw mode's attribute columns; null: none
  final IdWindow idWindow; // idAttribute; null: none
  final SubscriptionSetup setup; // topicId's creation, deletion on stop, the first start's seek

  SourceOptions(CaseInsensitiveStringMap o) {
    OptionTable t = new OptionTable("source");
    t.check(o, SUPPORTED);
    String project = t.string(o, "projectId");
    if (project == null) {
      project = System.getenv("GOOGLE_CLOUD_PROJECT");
    }
    String sub = t.string(o, "subscriptionId");
    if (sub == null || sub.isEmpty()) {
      throw new IllegalArgumentException("pubsub-go: option subscriptionId is required: a short id with projectId, "
          + "or projects/P/subscriptions/S");
    }
    if (!sub.startsWith("projects/")) {
      if (project == null || project.isEmpty()) {
        throw new IllegalArgumentException("pubsub-go: subscriptionId " + sub + " is a short id, so projectId is "
            + "required (or $GOOGLE_CLOUD_PROJECT); or give projects/P/subscriptions/S");
      }
      sub = "projects/" + project + "/subscriptions/" + sub;
    }
    subscription = sub;
    String emu = t.string(o, "emulatorHost");
    emulatorHost = emu != null ? emu : System.getenv("PUBSUB_EMULATOR_HOST");
    endpoint = t.string(o, "endpoint");
    credentialsFile = t.string(o, "credentials");
    credentialsJson = t.credentialsJson(o);
    impersonateServiceAccount = t.string(o, "impersonateServiceAccount");
    iamCredentialsEndpoint = t.string(o, "iamCredentialsEndpoint");
    numPartitions = (int) t.number(o, "numPartitions", 0);
    batchSize = (int) t.number(o, "batchSize", 0);
    maxWaitTimeMs = t.number(o, "maxWaitTimeMs", 0);
    maxBatchDurationMs = t.number(o, "maxBatchDurationMs", 0);
    // Worked out, as docs/source.md says: half maxBatchDurationMs when that is under 10 s.
    long quiet = t.number(o, "quietPeriodMs", 0);
    if (t.raw(o, "quietPeriodMs") == null && maxBatchDurationMs < 10_000) {
      quiet = maxBatchDurationMs / 2;
    }
    if (quiet >= maxBatchDurationMs) {
      throw new IllegalArgumentException("pubsub-go: quietPeriodMs " + quiet + " must be shorter than "
          + "maxBatchDurationMs " + maxBatchDurationMs + ": a task with no rows ends then");
    }
    quietPeriodMs = quiet;
    maxRecordsPerPartition = t.number(o, "maxRecordsPerPartition", 0);
    maxRecordsPerTrigger = t.raw(o, "maxRecordsPerTrigger") == null ? null : t.number(o, "maxRecordsPerTrigger", 0);
    maxBytesPerTrigger = optional(t, o, "maxBytesPerTrigger");
    maxBytesPerPartition = optional(t, o, "maxBytesPerPartition");
    maxOutstandingMessages = optional(t, o, "maxOutstandingMessages");
    minRecordsPerTrigger = optional(t, o, "minRecordsPerTrigger");
    minBytesPerTrigger = optional(t, o, "minBytesPerTrigger");
    maxTriggerDelayMs = t.number(o, "maxTriggerDelay", 0);
    checkMinimums(t, o);
    streamsPerPartition = (int) t.number(o, "streamsPerPartition", 0);
    catchUpStreamsPerPartition = (int) t.number(o, "catchUpStreamsPerPartition", 0);
    ackDeadlineSeconds = (int) t.number(o, "ackDeadlineSeconds", 0);
    commitLeaseSeconds = (int) t.number(o, "commitLeaseSeconds", 0);
    ackOnCommit = t.bool(o, "ackOnCommit");
    subscriberIdleMs = t.number(o, "subscriberIdleMs", 0);
    batchLogLocation = t.string(o, "batchLogLocation");
    idWindow = IdWindow.parse(t, o);
    decode = DecodeOptions.parse(t, o, project != null && !project.isEmpty() ? project : sub.split("/")[1]);
    setup = new SubscriptionSetup(t, o, project != null && !project.isEmpty() ? project : sub.split("/")[1]);
    derived = AttributeColumns.parse(t, o, java.util.Arrays.asList(io.pubsubgo.spark.bridge.Library.rawSchema()
        .fieldNames()), t.raw(o, "format") != null || t.raw(o, "decoder") != null);
  }

  private static Long optional(OptionTable t, CaseInsensitiveStringMap o, String name) {
    return t.raw(o, name) == null ? null : t.number(o, name, 0);
  }

  /** The minimums' errors, as the Python source's (options/admission.py). */
  private void checkMinimums(OptionTable t, CaseInsensitiveStringMap o) {
    if (t.raw(o, "maxTriggerDelay") != null && minRecordsPerTrigger == null && minBytesPerTrigger == null) {
      throw new IllegalArgumentException("pubsub-go: option maxTriggerDelay only applies with minRecordsPerTrigger "
          + "(alias minOffsetsPerTrigger) or minBytesPerTrigger: how long a micro-batch may wait for that much data");
    }
    if (minBytesPerTrigger != null && maxBytesPerTrigger != null && minBytesPerTrigger > maxBytesPerTrigger) {
      throw new IllegalArgumentException("pubsub-go: option minBytesPerTrigger=" + minBytesPerTrigger
          + " exceeds maxBytesPerTrigger=" + maxBytesPerTrigger + "; expected at most that");
    }
    if (minRecordsPerTrigger != null && maxRecordsPerTrigger != null && minRecordsPerTrigger > maxRecordsPerTrigger) {
      throw new IllegalArgumentException("pubsub-go: option minRecordsPerTrigger=" + minRecordsPerTrigger
          + " exceeds maxRecordsPerTrigger=" + maxRecordsPerTrigger + "; expected at most that");
    }
  }

  /** The Go subscriber's config for a task (the contract's subscriber_config). */
  String subscriberConfig(long maxRows, long cutoffUs) {
    ObjectNode c = new ObjectMapper().createObjectNode();
    c.put("subscription", subscription);
    TopicSchema.connection(this, c);
    c.put("streams", streamsPerPartition);
    c.put("catch_up_streams", catchUpStreamsPerPartition);
    c.put("batch_size", batchSize);
    c.put("max_wait_ms", maxWaitTimeMs);
    c.put("ack_deadline_seconds", ackDeadlineSeconds);
    // Handed-out messages stay outstanding until the task ends, so flow control is sized to what the task may
    // hand out, plus one batch ahead (the Python source's task/subscriber_config.py does the same).
    c.put("max_outstanding_messages", maxOutstandingMessages != null ? maxOutstandingMessages
        : Math.min(maxRows, 1_000_000) + batchSize);
    if (maxBytesPerPartition != null) {
      c.put("max_outstanding_bytes", maxBytesPerPartition);
    }
    if (cutoffUs > 0) {
      c.put("arrival_cutoff_us", cutoffUs);
    }
    return c.toString();
  }

  /** The driver's acker: a subscriber that never pulls. */
  String ackerConfig() {
    ObjectNode c = (ObjectNode) readTree(subscriberConfig(1, 0));
    c.put("no_pull", true);
    return c.toString();
  }

  private static com.fasterxml.jackson.databind.JsonNode readTree(String s) {
    try {
      return new ObjectMapper().readTree(s);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
