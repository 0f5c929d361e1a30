package io.pubsubgo.spark.sink;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pubsubgo.spark.bridge.Library;
import io.pubsubgo.spark.bridge.Publisher;
import io.pubsubgo.spark.source.OptionTable;
import java.io.File;
import java.io.IOException;
import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The JVM sink's options, from the option table both front ends read
 * (names, defaults, ranges); parsed on the driver, shipped to the tasks.
 */
final class SinkOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The sink options this front end supports so far (docs/jvm.md, "Options"). */
  static final List<String> SUPPORTED = Arrays.asList("topicId", "projectId", "emulatorHost", "endpoint",
      "credentials", "credentialsJson", "impersonateServiceAccount", "iamCredentialsEndpoint", "batchMaxMessages",
      "batchMaxBytes",
      "lingerMs", "maxInFlightBytes", "enableMessageOrdering", "idAttribute", "retryTimeoutMs", "publishTimeoutMs",
      "timestampAttribute", "timestampColumn", "compression", "compressionBytesThreshold", "schemaFrom",
      "schemaRevision", "publisherIdleMs");

  /** projects/P/topics/T; null: every row names its topic (the topic column). */
  /** The publisher config's connection fields (the contract's), which an admin request takes too. */
  private static final String[] CONNECTION = {"emulator_host", "endpoint", "credentials_file",
      "impersonate_service_account", "iam_credentials_endpoint", "credentials_json"};

  final String topic;
  /** The project of short topic ids in the topic column; null: only full paths are taken there. */
  final String project;
  final boolean enableMessageOrdering;
  final String idAttribute;
  final String timestampAttribute;
  final String timestampColumn;
  final long publishTimeoutMs;
  /** How long an executor keeps a task's publishers for the next task with the same config (PublisherPool). */
  final long publisherIdleMs;
  /** schemaFrom=topic: the input's columns encoded into the payload in the topic's schema (docs/sink.md). */
  final boolean schemaFromTopic;
  private final String config;

  /**
   * routed: the input has a topic column, so topicId is optional (the topic
   * of rows whose column is null), as in the Python sink (docs/sink.md,
   * "Routing rows by topic").
   */
  SinkOptions(CaseInsensitiveStringMap o, boolean routed) {
    OptionTable t = new OptionTable("sink");
    t.check(o, SUPPORTED);
    String given = blankToNull(t.string(o, "projectId"));
    String project = given != null ? given : blankToNull(System.getenv("GOOGLE_CLOUD_PROJECT"));
    String topicId = blankToNull(t.string(o, "topicId"));
    if (topicId == null && !routed) {
      throw new IllegalArgumentException("pubsub-go: option topicId is required: a short id with projectId, or "
          + "projects/P/topics/T (or a topic column that names each row's topic)");
    }
    if (topicId != null && !topicId.startsWith("projects/")) {
      if (project == null) {
        throw new IllegalArgumentException("pubsub-go: topicId " + topicId + " is a short id, so projectId is "
            + "required (or $GOOGLE_CLOUD_PROJECT); or give projects/P/topics/T");
      }
    }
    topic = topicId == null ? null : topicPath(project, topicId, "option topicId");
    if (routed && given == null) {
      // Short ids in the column: topicId's project, else the environment's,
      // else the credentials' (as the Python sink; not ADC's, which would
      // load the library on the driver).
      project = topic != null ? topic.split("/")[1] : project != null ? project
          : credentialsProject(t.string(o, "credentials"));
    }
    this.project = project;
    String schemaFrom = blankToNull(t.string(o, "schemaFrom"));
    if (schemaFrom != null && !"topic".equalsIgnoreCase(schemaFrom)) {
      throw new IllegalArgumentException("pubsub-go: option schemaFrom='" + schemaFrom + "' is not supported; "
          + "expected topic (encode the input's columns to the Pub/Sub schema of the topic)");
    }
    String revision = blankToNull(t.string(o, "schemaRevision"));
    if (revision != null && schemaFrom == null) {
      throw new IllegalArgumentException("pubsub-go: option schemaRevision only applies to schemaFrom=topic");
    }
    if (schemaFrom != null && routed) {
      throw new IllegalArgumentException("pubsub-go: option schemaFrom=topic does not go with a topic column: rows "
          + "routed to several topics could meet several schemas; write to one topicId");
    }
    schemaFromTopic = schemaFrom != null;
    enableMessageOrdering = t.bool(o, "enableMessageOrdering");
    idAttribute = t.string(o, "idAttribute");
    timestampAttribute = t.string(o, "timestampAttribute");
    timestampColumn = t.string(o, "timestampColumn");
    publishTimeoutMs = t.number(o, "publishTimeoutMs", 0);
    publisherIdleMs = t.number(o, "publisherIdleMs", 0);

    ObjectNode c = new ObjectMapper().createObjectNode();
    String emu = t.string(o, "emulatorHost");
    emu = emu != null ? emu : System.getenv("PUBSUB_EMULATOR_HOST");
    putIf(c, "emulator_host", emu);
    putIf(c, "endpoint", t.string(o, "endpoint"));
    putIf(c, "credentials_file", t.string(o, "credentials"));
    putIf(c, "credentials_json", t.credentialsJson(o)); // a secret: only in the library's config
    putIf(c, "impersonate_service_account", t.string(o, "impersonateServiceAccount"));
    putIf(c, "iam_credentials_endpoint", t.string(o, "iamCredentialsEndpoint"));
    c.put("max_batch_messages", t.number(o, "batchMaxMessages", 0));
    c.put("max_batch_bytes", t.number(o, "batchMaxBytes", 0));
    c.put("linger_ms", t.number(o, "lingerMs", 0));
    c.put("max_in_flight_bytes", t.number(o, "maxInFlightBytes", 0));
    c.put("enable_message_ordering", enableMessageOrdering);
    c.put("retry_timeout_ms", t.number(o, "retryTimeoutMs", 0));
    putIf(c, "id_attribute", idAttribute);
    putIf(c, "timestamp_attribute", timestampAttribute);
    if (timestampAttribute != null) {
      c.put("timestamp_column", timestampColumn);
    }
    String compression = t.choice(o, "compression");
    putIf(c, "compression", compression == null ? t.string(o, "compression") : compression);
    c.put("compression_bytes_threshold", t.number(o, "compressionBytesThreshold", 0));
    if (schemaFromTopic) {
      c.set("encode_schema", topicSchema(c, topic, revision));
    }
    config = c.toString();
  }

  /**
   * schemaFrom=topic: the topic's schema (the pinned revision, else the
   * newest) read on the driver by the library's admin op, as the Python
   * sink's topic_schema.py; the tasks' publishers encode to it.
   */
  private static ObjectNode topicSchema(ObjectNode conn, String topic, String revision) {
    ObjectMapper json = new ObjectMapper();
    ObjectNode req = json.createObjectNode();
    for (String k : CONNECTION) {
      if (conn.has(k)) {
        req.set(k, conn.get(k));
      }
    }
    req.put("op", "get_topic_schema");
    req.put("topic", topic);
    if (revision != null) {
      req.put("revision", revision);
    }
    com.fasterxml.jackson.databind.JsonNode got;
    try {
      got = json.readTree(Library.admin(req.toString()));
    } catch (RuntimeException | IOException e) {
      throw new IllegalArgumentException("pubsub-go: schemaFrom=topic: cannot read the schema of " + topic + ": "
          + e.getMessage(), e);
    }
    String type = got.path("type").asText();
    if (!"AVRO".equals(type) && !"PROTOCOL_BUFFER".equals(type)) {
      throw new IllegalArgumentException("pubsub-go: schemaFrom=topic: topic " + topic + " has a " + type
          + " schema (" + got.path("schema").asText() + "); the sink encodes to AVRO and PROTOCOL_BUFFER schemas");
    }
    ObjectNode enc = json.createObjectNode();
    for (String k : new String[] {"type", "encoding", "definition", "revision_id", "schema"}) {
      enc.put(k, got.path(k).asText());
    }
    return enc;
  }

  /**
   * schemaFrom=topic: the input's columns checked against the topic's
   * schema before any task runs, by the tasks' own code: the publisher
   * plans the encoding of a batch's columns before any row, so an empty
   * batch of the input's columns fails naming a column that does not fit.
   */
  void checkEncoding(InputColumns in) {
    try (Publisher p = Publisher.open(publisherConfig(topic)); ColumnBuffers empty = new ColumnBuffers(in)) {
      p.publishColumns(empty.descriptor());
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("pubsub-go: cannot write this input to " + topic + " with "
          + "schemaFrom=topic: " + e.getMessage(), e);
    }
  }

  private static String blankToNull(String s) {
    return s == null || s.trim().isEmpty() ? null : s.trim();
  }

  /** A topic id (with project) or a full path as the full path, checked as the Python sink's topic_path. */
  private static String topicPath(String project, String name, String what) {
    if (name.startsWith("projects/")) {
      String[] p = name.split("/", -1);
      if (p.length != 4 || !"topics".equals(p[2]) || p[1].isEmpty() || p[3].isEmpty()) {
        throw new IllegalArgumentException("pubsub-go: " + what + " '" + name + "' is not a valid topic path; "
            + "expected projects/PROJECT/topics/ID");
      }
      return name;
    }
    if (name.contains("/")) {
      throw new IllegalArgumentException("pubsub-go: " + what + ": topic id '" + name + "' is invalid; expected "
          + "an id or projects/PROJECT/topics/ID");
    }
    if (project == null) {
      throw new IllegalArgumentException("pubsub-go: " + what + ": a short topic id ('" + name + "') needs a "
          + "project id: set projectId, or give projects/PROJECT/topics/ID");
    }
    return "projects/" + project + "/topics/" + name;
  }

  private static String credentialsProject(String file) {
    if (file == null) {
      return null;
    }
    try {
      com.fasterxml.jackson.databind.JsonNode doc = new ObjectMapper().readTree(new File(file));
      String p = doc.path("project_id").asText("");
      p = p.isEmpty() ? doc.path("quota_project_id").asText("") : p;
      return p.isEmpty() ? null : p;
    } catch (IOException e) {
      return null; // the publisher reports an unreadable credentials file itself
    }
  }

  /**
   * The full topic path of a topic column's value (a null or blank takes
   * topicId); the errors are the Python sink's (SinkOptions.route).
   */
  String route(String value) {
    if (value == null || value.trim().isEmpty()) {
      if (topic == null) {
        throw new IllegalArgumentException("pubsub-go: a row's topic column is " + (value == null ? "null" : "empty")
            + " and option topicId is not set: give every row a topic, or set topicId for rows without one");
      }
      return topic;
    }
    return topicPath(project, value.trim(), "topic column value '" + value + "'");
  }

  private static void putIf(ObjectNode c, String key, String v) {
    if (v != null && !v.isEmpty()) {
      c.put(key, v);
    }
  }

  /** The Go publisher's config for one topic (the contract's publisher_config), as JSON. */
  String publisherConfig(String topicPath) {
    try {
      ObjectNode c = (ObjectNode) new ObjectMapper().readTree(config);
      c.put("topic", topicPath);
      return c.toString();
    } catch (IOException e) {
      throw new IllegalStateException(e); // config is our own JSON
    }
  }
}
