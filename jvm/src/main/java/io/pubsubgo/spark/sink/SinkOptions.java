package io.pubsubgo.spark.sink;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pubsubgo.spark.source.OptionTable;
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
      "credentials", "impersonateServiceAccount", "iamCredentialsEndpoint", "batchMaxMessages", "batchMaxBytes",
      "lingerMs", "maxInFlightBytes", "enableMessageOrdering", "idAttribute", "retryTimeoutMs", "publishTimeoutMs",
      "timestampAttribute", "timestampColumn", "compression", "compressionBytesThreshold");

  final String topic;
  final boolean enableMessageOrdering;
  final String idAttribute;
  final String timestampAttribute;
  final String timestampColumn;
  final long publishTimeoutMs;
  private final String config;

  SinkOptions(CaseInsensitiveStringMap o) {
    OptionTable t = new OptionTable("sink");
    t.check(o, SUPPORTED);
    String project = t.string(o, "projectId");
    if (project == null) {
      project = System.getenv("GOOGLE_CLOUD_PROJECT");
    }
    String topicId = t.string(o, "topicId");
    if (topicId == null || topicId.isEmpty()) {
      throw new IllegalArgumentException("pubsub-go: option topicId is required: a short id with projectId, or "
          + "projects/P/topics/T");
    }
    if (!topicId.startsWith("projects/")) {
      if (project == null || project.isEmpty()) {
        throw new IllegalArgumentException("pubsub-go: topicId " + topicId + " is a short id, so projectId is "
            + "required (or $GOOGLE_CLOUD_PROJECT); or give projects/P/topics/T");
      }
      topicId = "projects/" + project + "/topics/" + topicId;
    }
    topic = topicId;
    enableMessageOrdering = t.bool(o, "enableMessageOrdering");
    idAttribute = t.string(o, "idAttribute");
    timestampAttribute = t.string(o, "timestampAttribute");
    timestampColumn = t.string(o, "timestampColumn");
    publishTimeoutMs = t.number(o, "publishTimeoutMs", 0);

    ObjectNode c = new ObjectMapper().createObjectNode();
    c.put("topic", topic);
    String emu = t.string(o, "emulatorHost");
    emu = emu != null ? emu : System.getenv("PUBSUB_EMULATOR_HOST");
    putIf(c, "emulator_host", emu);
    putIf(c, "endpoint", t.string(o, "endpoint"));
    putIf(c, "credentials_file", t.string(o, "credentials"));
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
    config = c.toString();
  }

  private static void putIf(ObjectNode c, String key, String v) {
    if (v != null && !v.isEmpty()) {
      c.put(key, v);
    }
  }

  /** The Go publisher's config (the contract's publisher_config), as JSON. */
  String publisherConfig() {
    return config;
  }
}
