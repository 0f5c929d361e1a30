package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pubsubgo.spark.bridge.Decoders;
import io.pubsubgo.spark.bridge.Library;
import io.pubsubgo.spark.bridge.NativeException;
import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Schema mode's plan, on the driver (the Python front end's
 * spark/read/options/schema_plan.py, by the same rules and in the same words): the
 * user's .schema(...) is the output; columns named like a raw column are
 * filled from the message, the error column (column mode) gets the decode
 * error, every other column is decoded from the payload and together they
 * are the decoder's target schema, which reaches Go as an Arrow IPC schema
 * in the subscriber config's "decoder" (go/internal/decode.DecoderConfig).
 * Without .schema(), the decoder derives the columns (derive).
 */
final class SchemaPlan {
  /** Added to a schema derived from the decoder (no .schema() given). */
  static final List<String> DERIVED_METADATA = Arrays.asList("message_id", "publish_time", "attributes");

  private static final ObjectMapper JSON = new ObjectMapper();

  final DecodeOptions dec;
  final StructType output;
  /** The decoder config (JSON): the target schema, options, limits, the topic's schema. */
  final String decoderConfig;

  private SchemaPlan(DecodeOptions dec, StructType output, String decoderConfig) {
    this.dec = dec;
    this.output = output;
    this.decoderConfig = decoderConfig;
  }

  private static IllegalArgumentException error(String msg) {
    return new IllegalArgumentException("pubsub-go: " + msg);
  }

  /** The raw columns a schema-mode output may hold, with their Spark types. */
  static Map<String, DataType> metadata() {
    Map<String, DataType> m = new HashMap<>();
    for (StructField f : Library.rawSchema().fields()) {
      m.put(f.name(), f.dataType());
    }
    return m;
  }

  /**
   * The plan for a scan of schema (the user's, or the one derive gave), or
   * null in raw mode; opens the decoder on the driver, so a schema or an
   * option it rejects fails the query at its start.
   */
  static SchemaPlan build(SourceOptions opts, StructType schema) {
    DecodeOptions dec = opts.decode;
    if (dec == null) {
      if (!schema.equals(SourceSchema.raw(opts))) {
        throw error("a .schema(...) other than the raw schema needs schema mode: set option format ("
            + String.join(" or ", DecodeOptions.values("format")) + "), schemaFrom=topic or decoder (a .wasm "
            + "module) to decode payloads into it");
      }
      return null;
    }
    List<String> names = Arrays.asList(schema.fieldNames());
    List<String> dupes = new ArrayList<>();
    for (String n : names) {
      if (names.indexOf(n) != names.lastIndexOf(n) && !dupes.contains(n)) {
        dupes.add(n);
      }
    }
    if (!dupes.isEmpty()) {
      throw error("the schema has duplicate columns: " + String.join(", ", dupes));
    }
    if (dec.errorColumn != null && !names.contains(dec.errorColumn)) {
      throw error("onDecodeError=column writes the decode error to column '" + dec.errorColumn + "' (option "
          + "errorColumn): add `" + dec.errorColumn + " STRING` to the schema");
    }
    Map<String, DataType> meta = metadata();
    List<StructField> decoded = new ArrayList<>();
    for (StructField f : schema.fields()) {
      if (meta.containsKey(f.name())) {
        DataType want = meta.get(f.name());
        if (!f.dataType().equals(want) || !f.nullable()) {
          throw error("column " + f.name() + " is filled from the message and must be a nullable "
              + want.simpleString().toUpperCase(java.util.Locale.ROOT) + ", not " + f.dataType().simpleString().toUpperCase(java.util.Locale.ROOT)
              + (f.nullable() ? "" : " NOT NULL"));
        }
      } else if (f.name().equals(dec.errorColumn)) {
        if (!f.dataType().equals(DataTypes.StringType) || !f.nullable()) {
          throw error("the error column " + f.name() + " (option errorColumn) must be a nullable STRING");
        }
      } else {
        if (!f.nullable()) {
          throw error("decoded column " + f.name() + " is NOT NULL; decoded columns must be nullable (a null "
              + "value or a record that fails to decode gives null)");
        }
        decoded.add(f);
      }
    }
    if (decoded.isEmpty()) {
      throw error("the schema has no column to decode (all of " + String.join(", ", names) + " are filled from "
          + "the message); add the payload's fields");
    }
    JsonNode topic = dec.schemaFromTopic ? TopicSchema.fetch(opts) : null;
    String cfg = config(dec, DataTypes.createStructType(decoded), topic);
    try {
      Decoders.open(cfg);
    } catch (NativeException e) {
      throw error("the " + (topic != null ? "topic schema's" : dec.format) + " decoder rejects the schema or "
          + "options: " + e.getMessage());
    }
    return new SchemaPlan(dec, schema, cfg);
  }

  /**
   * The output schema without .schema(): the decoder's own columns (Avro:
   * from avroSchema, as from_avro; protobuf: from the message type, as
   * from_protobuf; a module's; schemaFrom=topic: the reader revision's),
   * top-level nullable, then message_id, publish_time, attributes (and the
   * error column in column mode).
   */
  static StructType derive(SourceOptions opts) {
    DecodeOptions dec = opts.decode;
    if ("json".equals(dec.format) && !dec.schemaFromTopic) {
      throw error("format=json needs a schema: spark.readStream.format('pubsub-go').schema('id BIGINT, name "
          + "STRING, ...'); columns named like message_id, publish_time or attributes are filled from the message");
    }
    JsonNode topic = dec.schemaFromTopic ? TopicSchema.fetch(opts) : null;
    String what = topic != null ? "schemaFrom=topic (" + topic.path("schema").asText() + " revision "
        + topic.path("revision_id").asText() + ")" : dec.what();
    StructType derived;
    try {
      derived = Decoders.open(config(dec, null, topic));
    } catch (NativeException e) {
      throw error(what + ": " + e.getMessage());
    }
    Map<String, DataType> meta = metadata();
    List<StructField> fields = new ArrayList<>();
    for (StructField f : derived.fields()) {
      if (meta.containsKey(f.name()) || f.name().equals(dec.errorColumn)) {
        throw error(what + ": field '" + f.name() + "' is also a column filled from the message; give a "
            + ".schema(...) that leaves it out");
      }
      fields.add(DataTypes.createStructField(f.name(), f.dataType(), true));
    }
    for (String n : DERIVED_METADATA) {
      fields.add(DataTypes.createStructField(n, meta.get(n), true));
    }
    if (dec.errorColumn != null) {
      fields.add(DataTypes.createStructField(dec.errorColumn, DataTypes.StringType, true));
    }
    return DataTypes.createStructType(fields);
  }

  /** go/internal/decode.DecoderConfig: a built-in format natively, a user's module in the sandbox. */
  static String config(DecodeOptions dec, StructType target, JsonNode topic) {
    ObjectNode c = JSON.createObjectNode();
    if (dec.decoderPath != null) {
      c.put("wasm", dec.decoderPath);
      c.put("format", new File(dec.decoderPath).getName());
    } else {
      c.put("format", dec.format);
    }
    if (target != null) {
      c.put("schema", Decoders.arrowSchemaBase64(target));
    }
    ObjectNode o = c.putObject("options");
    dec.moduleOptions.forEach(o::put);
    c.put("timeout_ms", dec.timeoutMs);
    c.put("memory_limit_mb", dec.memoryLimitMb);
    if (topic != null) {
      ObjectNode t = c.putObject("topic_schema");
      t.put("schema", topic.path("schema").asText());
      t.put("type", topic.path("type").asText());
      t.put("revision_id", topic.path("revision_id").asText());
      t.set("revisions", topic.path("revisions"));
    }
    return c.toString();
  }

  /** A task's subscriber config with this plan's decoder. */
  String subscriberConfig(String base) {
    try {
      ObjectNode c = (ObjectNode) JSON.readTree(base);
      c.set("decoder", JSON.readTree(decoderConfig));
      return c.toString();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** What a task needs of the plan. */
  SchemaMode task(SourceOptions opts) {
    String[] from = new String[output.fields().length];
    for (int i = 0; i < from.length; i++) {
      String n = output.fields()[i].name();
      from[i] = n.equals(dec.errorColumn) ? DecodeOptions.decodeErrorColumn() : n;
    }
    String dlq = null;
    if ("deadletter".equals(dec.onError)) {
      ObjectNode p = JSON.createObjectNode();
      p.put("topic", dec.deadLetterTopic);
      TopicSchema.connection(opts, p);
      dlq = p.toString();
    }
    return new SchemaMode(from, dec.onError, opts.subscription, dlq, dec.timeoutMs, dec.memoryLimitMb);
  }
}
