package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pubsubgo.spark.bridge.Library;
import io.pubsubgo.spark.bridge.NativeException;
import java.io.IOException;
import java.io.Serializable;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import java.util.logging.Logger;

/**
 * The subscription's lifecycle and the query's start position, on the
 * driver through the library's admin ops (the Python front end's
 * spark/read/driver/subscription_lifecycle.py and start_position.py, by the same
 * rules and in the same words): with topicId the subscription is created
 * when missing, with the settings given; with deleteSubscriptionOnStreamStop
 * it is deleted when the query stops; startingTimestamp or startingSnapshot
 * seeks it when the query starts for the first time (Spark asks for the
 * initial offset only when the checkpoint has none). Nothing is created,
 * deleted or seeked unless asked for.
 */
final class SubscriptionSetup implements Serializable {
  private static final long serialVersionUID = 1L;
  // java.util.logging: the jar compiles against Spark's API alone (no logging API on that classpath).
  private static final Logger LOG = Logger.getLogger(SubscriptionSetup.class.getName());

  /** The service's retention when messageRetentionSeconds is not given (subscription-properties docs). */
  private static final long DEFAULT_RETENTION_S = 7 * 24 * 3600;

  final String topic; // projects/P/topics/T: create the subscription if missing; null: never
  final String filter;
  final long messageRetentionSeconds; // 0: the service's default
  final String deadLetterTopic;
  final long maxDeliveryAttempts;
  final boolean exactlyOnce;
  final boolean ordering;
  final boolean retainAcked;
  final boolean deleteOnStop;
  final Long startMs;       // startingTimestamp, absolute epoch ms
  final Long startBeforeMs; // startingTimestamp, relative: ms before the first start
  final String startSnapshot;

  SubscriptionSetup(OptionTable t, CaseInsensitiveStringMap o, String project) {
    String rawTopic = trimmed(t.raw(o, "topicId"));
    if (rawTopic == null) {
      for (String n : t.requiring("topicId")) {
        if (t.raw(o, n) != null) {
          throw new IllegalArgumentException("pubsub-go: option " + n + " only applies when the source creates the "
              + "subscription: set topicId too (the subscription is created on it if it does not exist)");
        }
      }
    }
    topic = rawTopic == null ? null : fullName("topics", project, rawTopic, "topicId/subscriptionDeadLetterTopicId");
    String dlq = trimmed(t.raw(o, "subscriptionDeadLetterTopicId"));
    deadLetterTopic = dlq == null ? null : fullName("topics", project, dlq, "topicId/subscriptionDeadLetterTopicId");
    if (t.raw(o, "maxDeliveryAttempts") != null && deadLetterTopic == null) {
      throw new IllegalArgumentException("pubsub-go: option maxDeliveryAttempts needs subscriptionDeadLetterTopicId "
          + "(the topic that receives messages delivered that many times)");
    }
    filter = trimmed(t.raw(o, "filter"));
    messageRetentionSeconds = t.number(o, "messageRetentionSeconds", 0);
    maxDeliveryAttempts = t.number(o, "maxDeliveryAttempts", 0);
    exactlyOnce = t.bool(o, "enableExactlyOnceDelivery");
    ordering = t.bool(o, "enableMessageOrdering");
    retainAcked = t.bool(o, "retainAckedMessages");
    deleteOnStop = t.bool(o, "deleteSubscriptionOnStreamStop");

    String ts = trimmed(t.raw(o, "startingTimestamp"));
    String snap = trimmed(t.raw(o, "startingSnapshot"));
    if (ts != null && snap != null) {
      throw new IllegalArgumentException("pubsub-go: options startingTimestamp and startingSnapshot are exclusive: "
          + "set one");
    }
    startSnapshot = snap == null ? null : fullName("snapshots", project, snap, "startingSnapshot");
    Long[] at = ts == null ? new Long[2] : startingTimestamp(ts);
    startMs = at[0];
    startBeforeMs = at[1];
  }

  private static String trimmed(String v) {
    return v == null || v.trim().isEmpty() ? null : v.trim();
  }

  /** A short id plus project, or a full projects/P/kind/N path (the Python client's _full_name). */
  static String fullName(String kind, String project, String name, String option) {
    String one = kind.substring(0, kind.length() - 1);
    if (name.startsWith("projects/")) {
      String[] p = name.split("/", -1);
      if (p.length != 4 || !kind.equals(p[2]) || p[1].isEmpty() || p[3].isEmpty()) {
        throw new IllegalArgumentException("pubsub-go: option " + option + ": '" + name + "' is not a valid " + one
            + " path; expected projects/PROJECT/" + kind + "/ID");
      }
      return name;
    }
    if (name.contains("/")) {
      throw new IllegalArgumentException("pubsub-go: option " + option + ": " + one + " id '" + name + "' is "
          + "invalid; expected an id or projects/PROJECT/" + kind + "/ID");
    }
    if (project == null || project.isEmpty()) {
      throw new IllegalArgumentException("pubsub-go: option " + option + ": a short " + one + " id ('" + name
          + "') needs a project id");
    }
    return "projects/" + project + "/" + kind + "/" + name;
  }

  private static final Map<String, Long> UNITS_MS = new HashMap<>();

  static {
    long[] ms = {1, 1, 1000, 1000, 1000, 60_000, 60_000, 60_000, 3_600_000, 3_600_000, 86_400_000, 86_400_000};
    String[] names = {"ms", "millisecond", "s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day"};
    for (int i = 0; i < names.length; i++) {
      UNITS_MS.put(names[i], ms[i]);
    }
  }

  private static final Pattern RELATIVE = Pattern.compile("^-\\s*(\\d+)\\s*([a-z]+?)s?$");
  private static final String FORMS = "epoch milliseconds (e.g. 1735689600000), an ISO-8601 time (e.g. "
      + "2025-01-01T00:00:00Z; no zone means UTC), or a time before the query's first start (e.g. -2 hours, -30m, "
      + "-1 day)";

  /** {absolute epoch ms, ms before the first start}, one of them set. */
  static Long[] startingTimestamp(String ts) {
    if (ts.matches("\\d+")) {
      return new Long[] {Long.parseLong(ts), null};
    }
    Matcher m = RELATIVE.matcher(ts.toLowerCase(Locale.ROOT));
    if (m.matches()) {
      Long unit = UNITS_MS.get(m.group(2));
      if (unit == null) {
        throw new IllegalArgumentException("pubsub-go: option startingTimestamp='" + ts + "': unknown unit '"
            + m.group(2) + "'; expected " + FORMS);
      }
      return new Long[] {null, Long.parseLong(m.group(1)) * unit};
    }
    String s = ts.replace("Z", "+00:00");
    if (s.length() > 10 && s.charAt(10) == ' ') {
      s = s.substring(0, 10) + "T" + s.substring(11);
    }
    try {
      return new Long[] {OffsetDateTime.parse(s).toInstant().toEpochMilli(), null};
    } catch (DateTimeParseException e) {
      // no zone: UTC
    }
    try {
      return new Long[] {LocalDateTime.parse(s).toInstant(ZoneOffset.UTC).toEpochMilli(), null};
    } catch (DateTimeParseException e) {
      // a date alone: its midnight, UTC
    }
    try {
      return new Long[] {LocalDate.parse(s).atStartOfDay().toInstant(ZoneOffset.UTC).toEpochMilli(), null};
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("pubsub-go: option startingTimestamp='" + ts + "' is not understood; "
          + "expected " + FORMS);
    }
  }

  private static JsonNode admin(SourceOptions opts, ObjectNode req) throws NativeException {
    TopicSchema.connection(opts, req);
    try {
      return new ObjectMapper().readTree(Library.admin(req.toString()));
    } catch (IOException e) {
      throw new IllegalStateException("pubsub-go: the library's admin answer is not JSON: " + e.getMessage(), e);
    }
  }

  private static ObjectNode request(String op, String subscription) {
    ObjectNode r = new ObjectMapper().createObjectNode();
    r.put("op", op);
    r.put("subscription", subscription);
    return r;
  }

  /** Creates the subscription on topic if it does not exist (topicId only); an existing one must be on it. */
  void ensure(SourceOptions opts) {
    if (topic == null) {
      return;
    }
    String sub = opts.subscription;
    JsonNode got = null;
    try {
      got = admin(opts, request("get_subscription", sub));
    } catch (NativeException e) {
      if (!"not_found".equals(e.kind())) {
        throw e;
      }
    }
    if (got != null) {
      if (!topic.equals(got.path("topic").asText())) {
        throw new IllegalArgumentException("pubsub-go: subscription " + sub + " exists on topic "
            + got.path("topic").asText() + ", not on topicId " + topic + "; use another subscriptionId or drop "
            + "topicId");
      }
      LOG.info("pubsub-go: subscription " + sub + " exists; its settings are left as they are");
      return;
    }
    ObjectNode r = request("create_subscription", sub);
    r.put("topic", topic);
    r.put("ack_deadline_seconds", opts.ackDeadlineSeconds);
    if (filter != null) {
      r.put("filter", filter);
    }
    r.put("message_retention_seconds", messageRetentionSeconds);
    if (deadLetterTopic != null) {
      r.put("dead_letter_topic", deadLetterTopic);
      r.put("max_delivery_attempts", maxDeliveryAttempts);
    }
    r.put("enable_exactly_once_delivery", exactlyOnce);
    r.put("enable_message_ordering", ordering);
    r.put("retain_acked_seconds", retainAcked ? (messageRetentionSeconds > 0 ? messageRetentionSeconds
        : DEFAULT_RETENTION_S) : 0);
    try {
      admin(opts, r);
    } catch (NativeException e) {
      if ("already_exists".equals(e.kind())) {
        return; // another query made it meanwhile
      }
      if ("not_found".equals(e.kind())) {
        throw new IllegalArgumentException("pubsub-go: cannot create subscription " + sub + ": topic " + topic
            + " (or the dead-letter topic) does not exist (" + e.getMessage() + ")", e);
      }
      throw e;
    }
    LOG.info("pubsub-go: created subscription " + sub + " on " + topic);
  }

  /** startingTimestamp/startingSnapshot: called from initialOffset() only, so never on a restart. */
  void seekOnFirstStart(SourceOptions opts) {
    if (startSnapshot == null && startMs == null && startBeforeMs == null) {
      return;
    }
    ObjectNode r = request("seek", opts.subscription);
    if (startSnapshot != null) {
      r.put("snapshot", startSnapshot);
      admin(opts, r);
      LOG.warning("pubsub-go: seeked subscription " + opts.subscription + " to snapshot " + startSnapshot
          + " (first start of the query)");
      return;
    }
    long micros = startBeforeMs != null ? System.currentTimeMillis() * 1000 - startBeforeMs * 1000 : startMs * 1000;
    r.put("time_unix_micros", Math.max(micros, 1));
    admin(opts, r);
    LOG.warning("pubsub-go: seeked subscription " + opts.subscription + " to "
        + Instant.ofEpochSecond(0, Math.max(micros, 1) * 1000) + " (first start of the query)");
  }

  /** deleteSubscriptionOnStreamStop: best effort, once the query stopped. */
  void deleteOnStop(SourceOptions opts) {
    if (!deleteOnStop) {
      return;
    }
    try {
      admin(opts, request("delete_subscription", opts.subscription));
      LOG.info("pubsub-go: deleted subscription " + opts.subscription + " (deleteSubscriptionOnStreamStop)");
    } catch (NativeException e) {
      if (!"not_found".equals(e.kind())) {
        LOG.warning("pubsub-go: deleting subscription " + opts.subscription + " on stop failed: " + e.getMessage());
      }
    }
  }
}
