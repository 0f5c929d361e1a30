package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The JVM source's options, parsed once on the driver with errors that
 * name the option and what would be right. Names, defaults and ranges are
 * those of docs/source.md's option table (the Python front end's too).
 */
final class SourceOptions {
  final String subscription;
  final String emulatorHost;
  final String endpoint;
  final String credentialsFile;
  final String impersonateServiceAccount;
  final int numPartitions; // 0: Spark's default parallelism
  final int batchSize;
  final long maxWaitTimeMs;
  final long maxBatchDurationMs;
  final long quietPeriodMs;
  final long maxRecordsPerPartition;
  final long maxRecordsPerTrigger; // 0: no limit
  final int streamsPerPartition;
  final int ackDeadlineSeconds;
  final int commitLeaseSeconds;
  final String batchLogLocation; // null: under the checkpoint

  SourceOptions(CaseInsensitiveStringMap o) {
    String project = str(o, "projectId", System.getenv("GOOGLE_CLOUD_PROJECT"));
    String sub = str(o, "subscriptionId", null);
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
    emulatorHost = str(o, "emulatorHost", System.getenv("PUBSUB_EMULATOR_HOST"));
    endpoint = str(o, "endpoint", null);
    credentialsFile = str(o, "credentials", str(o, "credentialsFile", null));
    impersonateServiceAccount = str(o, "impersonateServiceAccount", null);
    numPartitions = (int) num(o, "numPartitions", 0, 1, 100_000);
    batchSize = (int) num(o, "batchSize", 4000, 1, 1_000_000);
    maxWaitTimeMs = num(o, "maxWaitTimeMs", 20, 1, 3_600_000);
    maxBatchDurationMs = num(o, "maxBatchDurationMs", 10_000, 1, 86_400_000);
    quietPeriodMs = num(o, "quietPeriodMs", maxBatchDurationMs < 10_000 ? maxBatchDurationMs / 2 : 5000, 1,
        maxBatchDurationMs - 1);
    maxRecordsPerPartition = num(o, "maxRecordsPerPartition", 200_000, 1, 100_000_000);
    maxRecordsPerTrigger = num(o, "maxRecordsPerTrigger", 0, 1, Long.MAX_VALUE);
    streamsPerPartition = (int) num(o, "streamsPerPartition", 1, 1, 64);
    ackDeadlineSeconds = (int) num(o, "ackDeadlineSeconds", 10, 10, 600);
    commitLeaseSeconds = (int) num(o, "commitLeaseSeconds", 600, 10, 600);
    batchLogLocation = str(o, "batchLogLocation", null);
  }

  private static String str(CaseInsensitiveStringMap o, String name, String dflt) {
    String v = o.get(name);
    return v == null ? dflt : v;
  }

  private static long num(CaseInsensitiveStringMap o, String name, long dflt, long min, long max) {
    String v = o.get(name);
    if (v == null) {
      return dflt;
    }
    long n;
    try {
      n = Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("pubsub-go: option " + name + " is " + v + "; expected an integer in "
          + min + ".." + max);
    }
    if (n < min || n > max) {
      throw new IllegalArgumentException("pubsub-go: option " + name + " is " + n + "; expected " + min + ".." + max);
    }
    return n;
  }

  /** The Go subscriber's config for a task (the contract's subscriber_config). */
  String subscriberConfig(long maxRows, long cutoffUs) {
    ObjectNode c = new ObjectMapper().createObjectNode();
    c.put("subscription", subscription);
    if (emulatorHost != null && !emulatorHost.isEmpty()) {
      c.put("emulator_host", emulatorHost);
    }
    if (endpoint != null) {
      c.put("endpoint", endpoint);
    }
    if (credentialsFile != null) {
      c.put("credentials_file", credentialsFile);
    }
    if (impersonateServiceAccount != null) {
      c.put("impersonate_service_account", impersonateServiceAccount);
    }
    c.put("streams", streamsPerPartition);
    c.put("batch_size", batchSize);
    c.put("max_wait_ms", maxWaitTimeMs);
    c.put("ack_deadline_seconds", ackDeadlineSeconds);
    c.put("max_outstanding_messages", Math.min(maxRows, 1_000_000) + batchSize);
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

  static String lower(String s) {
    return s.toLowerCase(Locale.ROOT);
  }

  static Map<String, String> asMap(CaseInsensitiveStringMap o) {
    return o.asCaseSensitiveMap();
  }
}
