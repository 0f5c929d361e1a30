package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pubsubgo.spark.bridge.Library;
import io.pubsubgo.spark.bridge.NativeException;
import java.io.IOException;

/**
 * schemaFrom=topic: the Pub/Sub schema of the subscription's topic, read on
 * the driver (the library's admin op get_topic_schema, through the source's
 * endpoint and credentials), at load() for the derived columns and at query
 * start for the tasks, which get it in their decoder config
 * (go/internal/decode/topicschema.go decodes each message by its revision).
 * The Python front end's spark/read/driver/topic_schema.py.
 */
final class TopicSchema {
  private TopicSchema() {}

  /** The connection fields of the library's configs (clientopt.Options), from the source's options. */
  static void connection(SourceOptions opts, ObjectNode c) {
    if (opts.emulatorHost != null && !opts.emulatorHost.isEmpty()) {
      c.put("emulator_host", opts.emulatorHost);
    }
    if (opts.endpoint != null) {
      c.put("endpoint", opts.endpoint);
    }
    if (opts.credentialsFile != null) {
      c.put("credentials_file", opts.credentialsFile);
    }
    if (opts.credentialsJson != null) {
      c.put("credentials_json", opts.credentialsJson);
    }
    if (opts.impersonateServiceAccount != null) {
      c.put("impersonate_service_account", opts.impersonateServiceAccount);
    }
    if (opts.iamCredentialsEndpoint != null) {
      c.put("iam_credentials_endpoint", opts.iamCredentialsEndpoint);
    }
  }

  /** The topic's schema: the pinned revision (schemaRevision) or the newest, and every revision known now. */
  static JsonNode fetch(SourceOptions opts) {
    ObjectMapper json = new ObjectMapper();
    ObjectNode req = json.createObjectNode();
    req.put("op", "get_topic_schema");
    req.put("subscription", opts.subscription);
    if (opts.decode.schemaRevision != null) {
      req.put("revision", opts.decode.schemaRevision);
    }
    connection(opts, req);
    JsonNode got;
    try {
      got = json.readTree(Library.admin(req.toString()));
    } catch (NativeException | IOException e) {
      throw new IllegalArgumentException("pubsub-go: schemaFrom=topic: cannot read the schema of "
          + opts.subscription + ": " + e.getMessage(), e);
    }
    String type = got.path("type").asText();
    if (!"AVRO".equals(type) && !"PROTOCOL_BUFFER".equals(type)) {
      throw new IllegalArgumentException("pubsub-go: schemaFrom=topic: topic " + got.path("topic").asText()
          + " has a " + type + " schema (" + got.path("schema").asText() + "); the source decodes AVRO and "
          + "PROTOCOL_BUFFER schemas");
    }
    return got;
  }
}
