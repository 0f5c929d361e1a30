package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Schema mode's options (format or decoder set): which decoder the Go data
 * plane runs and what happens to a payload that fails to decode
 * (docs/source.md, "Schema mode"). The same checks, in the same words, as
 * the Python front end's spark/read/options/decode_options.py and
 * protobuf_options.py; names, values and defaults from the option table.
 */
final class DecodeOptions {
  /** The options of schema mode this front end reads (SourceOptions.SUPPORTED adds them). */
  static final List<String> NAMES = Arrays.asList("format", "decoder", "avroSchema", "protobufMessage",
      "protobufDescriptorFile", "protobufDescriptorSet", "protobufSource", "protobufEncoding",
      "protobufRecursiveDepth", "decoderOptions", "onDecodeError", "deadLetterTopicId", "errorColumn",
      "decoderTimeoutMs", "decoderMemoryLimitMB", "decoderEngine", "schemaFrom", "schemaRevision");
  /** Options that mean something only in schema mode, with what they need. */
  private static final List<String> SCHEMA_MODE_ONLY = Arrays.asList("avroSchema", "decoderOptions",
      "onDecodeError", "deadLetterTopicId", "errorColumn", "decoderTimeoutMs", "decoderMemoryLimitMB",
      "decoderEngine", "schemaRevision", "protobufMessage", "protobufDescriptorFile", "protobufDescriptorSet",
      "protobufSource", "protobufEncoding", "protobufRecursiveDepth");
  private static final List<String> PROTOBUF = Arrays.asList("protobufMessage", "protobufDescriptorFile",
      "protobufDescriptorSet", "protobufSource", "protobufEncoding", "protobufRecursiveDepth");
  private static final List<String> DEFINITIONS = Arrays.asList("protobufDescriptorFile", "protobufDescriptorSet",
      "protobufSource");

  final String format;        // a built-in format, or "custom" for a user module
  final String decoderPath;   // the user module; null: a built-in format, run natively in Go
  final Map<String, String> moduleOptions = new LinkedHashMap<>(); // decoderOptions, avro_schema, protobuf_*
  final String onError;       // deadletter, fail or column
  final String deadLetterTopic; // projects/P/topics/T
  final String errorColumn;   // column mode only
  final long timeoutMs;
  final long memoryLimitMb;
  final boolean schemaFromTopic;
  final String schemaRevision;

  private DecodeOptions(String format, String decoderPath, String onError, String deadLetterTopic,
      String errorColumn, long timeoutMs, long memoryLimitMb, boolean schemaFromTopic, String schemaRevision) {
    this.format = format;
    this.decoderPath = decoderPath;
    this.onError = onError;
    this.deadLetterTopic = deadLetterTopic;
    this.errorColumn = errorColumn;
    this.timeoutMs = timeoutMs;
    this.memoryLimitMb = memoryLimitMb;
    this.schemaFromTopic = schemaFromTopic;
    this.schemaRevision = schemaRevision;
  }

  private static final JsonNode TABLE = resource("/io/pubsubgo/options.json");
  private static final JsonNode CONTRACT = resource("/io/pubsubgo/contract.json");

  private static JsonNode resource(String name) {
    try (java.io.InputStream in = DecodeOptions.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("pubsub-go: the jar lacks " + name + " (built by jvm/build.sh)");
      }
      return new ObjectMapper().readTree(in);
    } catch (IOException e) {
      throw new IllegalStateException("pubsub-go: reading " + name + ": " + e, e);
    }
  }

  /** The source option's row of the option table. */
  private static JsonNode row(String name) {
    for (JsonNode r : TABLE.path("options")) {
      for (JsonNode s : r.path("sides")) {
        if ("source".equals(s.asText()) && name.equals(r.path("name").asText())) {
          return r;
        }
      }
    }
    throw new IllegalStateException("pubsub-go: " + name + " is not a source option of the table");
  }

  /** An enum option's values in the option table: its own, or the contract list it names. */
  static List<String> values(String name) {
    JsonNode r = row(name);
    List<String> out = new ArrayList<>();
    for (JsonNode x : r.has("values_contract") ? CONTRACT.path(r.get("values_contract").asText()) : r.path("values")) {
      out.add(x.asText());
    }
    return out;
  }

  /** The column the Go subscriber adds beside the decoded ones (the contract's decode_error_column). */
  static String decodeErrorColumn() {
    return CONTRACT.path("decode_error_column").asText();
  }

  private static IllegalArgumentException error(String msg) {
    return new IllegalArgumentException("pubsub-go: " + msg);
  }

  private static String given(OptionTable t, CaseInsensitiveStringMap o, String name) {
    String v = t.raw(o, name);
    return v == null || v.trim().isEmpty() ? null : v;
  }

  /** Schema mode's options, or null in raw mode; project: for a short deadLetterTopicId. */
  static DecodeOptions parse(OptionTable t, CaseInsensitiveStringMap o, String project) {
    String fmt = given(t, o, "format");
    fmt = fmt == null ? null : fmt.trim().toLowerCase(Locale.ROOT);
    String module = given(t, o, "decoder");
    List<String> formats = values("format");
    boolean fromTopic = schemaFrom(t, o, fmt, module);
    if (fromTopic) {
      fmt = "avro";
    }
    if (fmt == null && module == null) {
      for (String n : SCHEMA_MODE_ONLY) {
        if (given(t, o, n) != null) {
          throw error("option " + n + " only applies to schema mode: set option format ("
              + String.join(" or ", formats) + ") or decoder (a .wasm module), and a .schema(...)");
        }
      }
      return null;
    }
    if (fmt != null && module != null) {
      throw error("options format and decoder are exclusive: format picks a built-in decoder, decoder gives your "
          + "own module");
    }
    if (fmt != null && !formats.contains(fmt)) {
      throw error("option format='" + t.raw(o, "format") + "' is not supported; expected "
          + String.join(" or ", formats) + " (or option decoder=<path to a .wasm module> for other formats)");
    }
    if (module != null) {
      File f = new File(module).getAbsoluteFile();
      if (!f.isFile()) {
        throw error("option decoder='" + module + "': no such file; expected the path of a decoder module (.wasm), "
            + "present at the same path on every executor");
      }
      module = f.getPath();
    }
    String avro = given(t, o, "avroSchema");
    if (fromTopic) {
      if (avro != null) {
        throw error("option avroSchema does not go with schemaFrom=topic: the schema is the topic's (pin a "
            + "revision with option schemaRevision)");
      }
    } else if (given(t, o, "schemaRevision") != null) {
      throw error("option schemaRevision only applies to schemaFrom=topic");
    } else if ("avro".equals(fmt)) {
      if (avro == null) {
        throw error("option avroSchema is required with format=avro: the writer's Avro schema as JSON text, e.g. "
            + "{\"type\": \"record\", \"name\": \"E\", \"fields\": [...]}");
      }
      JsonNode parsed;
      try {
        parsed = new ObjectMapper().readTree(avro);
      } catch (IOException e) {
        throw error("option avroSchema is not valid JSON: " + e.getMessage());
      }
      if (parsed == null || !parsed.isObject() || !"record".equals(parsed.path("type").asText())) {
        throw error("option avroSchema must be an Avro record schema ({\"type\": \"record\", ...})");
      }
    } else if (avro != null) {
      throw error("option avroSchema only applies to format=avro");
    }
    Map<String, String> protobuf = protobuf(t, o, fmt);
    Map<String, String> decOpts = new LinkedHashMap<>();
    String raw = given(t, o, "decoderOptions");
    if (raw != null) {
      JsonNode parsed;
      try {
        parsed = new ObjectMapper().readTree(raw);
      } catch (IOException e) {
        throw error("option decoderOptions is not valid JSON: " + e.getMessage());
      }
      boolean ok = parsed != null && parsed.isObject();
      for (Iterator<Map.Entry<String, JsonNode>> it = ok ? parsed.fields() : null; it != null && it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!e.getValue().isValueNode() || e.getValue().isNull()) {
          ok = false;
          break;
        }
        decOpts.put(e.getKey(), e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString());
      }
      if (!ok) {
        throw error("option decoderOptions must be a JSON object of strings, e.g. {\"timezone\": \"+02:00\"}");
      }
      if (decOpts.containsKey("avro_schema")) {
        throw error("give the Avro schema as option avroSchema, not in decoderOptions");
      }
    }
    String engine = given(t, o, "decoderEngine");
    engine = engine == null ? t.string(o, "decoderEngine") : engine.trim().toLowerCase(Locale.ROOT);
    String auto = row("decoderEngine").path("default").asText();
    if (!values("decoderEngine").contains(engine)) {
      throw error("option decoderEngine='" + t.raw(o, "decoderEngine") + "' is not one of "
          + String.join(", ", values("decoderEngine")));
    }
    if (!engine.equals(auto) && module == null) {
      throw error("option decoderEngine applies to a decoder module (option decoder); the built-in formats run "
          + "natively");
    }
    if ("wasmtime".equals(engine)) {
      throw error("option decoderEngine=wasmtime is not supported by the JVM front end (wasmtime's library comes "
          + "with the Python package); auto and wazero run the module in wazero, built into the library");
    }
    String dlq = given(t, o, "deadLetterTopicId");
    String onError = given(t, o, "onDecodeError");
    onError = onError == null ? (dlq != null ? "deadletter" : "fail") : onError.trim().toLowerCase(Locale.ROOT);
    List<String> modes = values("onDecodeError");
    if (!modes.contains(onError)) {
      throw error("option onDecodeError='" + t.raw(o, "onDecodeError") + "' is not one of " + String.join(", ", modes));
    }
    if ("deadletter".equals(onError) && dlq == null) {
      throw error("onDecodeError=deadletter needs option deadLetterTopicId: the topic that receives payloads that "
          + "fail to decode");
    }
    if (dlq != null && !"deadletter".equals(onError)) {
      throw error("option deadLetterTopicId is only used with onDecodeError=deadletter, not " + onError);
    }
    if (dlq != null && !dlq.startsWith("projects/")) {
      if (project == null || project.isEmpty() || dlq.contains("/")) {
        throw error("option deadLetterTopicId " + dlq + ": give a topic id (with projectId) or projects/P/topics/T");
      }
      dlq = "projects/" + project + "/topics/" + dlq;
    }
    String errCol = given(t, o, "errorColumn");
    if (errCol != null && !"column".equals(onError)) {
      throw error("option errorColumn only applies to onDecodeError=column, not " + onError);
    }
    if ("column".equals(onError) && errCol == null) {
      errCol = t.string(o, "errorColumn");
    }
    DecodeOptions d = new DecodeOptions(fmt != null ? fmt : "custom", module, onError, dlq, errCol,
        t.number(o, "decoderTimeoutMs", 0), t.number(o, "decoderMemoryLimitMB", 0), fromTopic,
        given(t, o, "schemaRevision") == null ? null : given(t, o, "schemaRevision").trim());
    d.moduleOptions.putAll(decOpts);
    if ("avro".equals(fmt) && !fromTopic) {
      d.moduleOptions.put("avro_schema", avro);
    }
    d.moduleOptions.putAll(protobuf);
    return d;
  }

  /** Option schemaFrom: "topic" decodes by the Pub/Sub schema of the subscription's topic. */
  private static boolean schemaFrom(OptionTable t, CaseInsensitiveStringMap o, String fmt, String module) {
    String raw = given(t, o, "schemaFrom");
    if (raw == null) {
      return false;
    }
    if (!"topic".equalsIgnoreCase(raw.trim())) {
      throw error("option schemaFrom='" + raw + "' is not supported; expected topic (decode by the Pub/Sub schema "
          + "of the subscription's topic)");
    }
    if (module != null) {
      throw error("options schemaFrom and decoder are exclusive: schemaFrom=topic decodes with the built-in decoder "
          + "of the topic's schema type");
    }
    if (fmt != null && !"avro".equals(fmt)) {
      throw error("option format='" + fmt + "' does not go with schemaFrom=topic, which decodes Avro schemas "
          + "(leave format out)");
    }
    return true;
  }

  /** The decoder options of format=protobuf (protobuf_options.py); {} for other formats. */
  private static Map<String, String> protobuf(OptionTable t, CaseInsensitiveStringMap o, String fmt) {
    Map<String, String> out = new LinkedHashMap<>();
    if (!"protobuf".equals(fmt)) {
      for (String n : PROTOBUF) {
        if (given(t, o, n) != null) {
          throw error("option " + n + " only applies to format=protobuf");
        }
      }
      return out;
    }
    String message = given(t, o, "protobufMessage");
    if (message == null) {
      throw error("option protobufMessage is required with format=protobuf: the message type's full name, e.g. "
          + "mypackage.Event");
    }
    List<String> defs = new ArrayList<>();
    for (String n : DEFINITIONS) {
      if (given(t, o, n) != null) {
        defs.add(n);
      }
    }
    if (defs.size() != 1) {
      throw error("format=protobuf needs exactly one of " + String.join(", ", DEFINITIONS) + " (a descriptor set "
          + "file as protoc --include_imports -o writes, the same inline as base64, or .proto source text)"
          + (defs.isEmpty() ? "" : "; got " + String.join(" and ", defs)));
    }
    out.put("protobuf_message", message.trim());
    String value = given(t, o, defs.get(0));
    if ("protobufDescriptorFile".equals(defs.get(0))) {
      try { // read on the driver: executors get the bytes, not the path
        out.put("protobuf_descriptor_set", Base64.getEncoder().encodeToString(Files.readAllBytes(new File(value)
            .toPath())));
      } catch (IOException e) {
        throw error("option protobufDescriptorFile='" + value + "': " + e);
      }
    } else if ("protobufDescriptorSet".equals(defs.get(0))) {
      try {
        Base64.getDecoder().decode(value.trim());
      } catch (IllegalArgumentException e) {
        throw error("option protobufDescriptorSet is not base64 (" + e.getMessage() + "): give a serialized "
            + "FileDescriptorSet, base64-encoded");
      }
      out.put("protobuf_descriptor_set", value.trim());
    } else {
      out.put("protobuf_source", value);
    }
    String encoding = given(t, o, "protobufEncoding");
    if (encoding != null) {
      encoding = encoding.trim().toLowerCase(Locale.ROOT);
      if (!values("protobufEncoding").contains(encoding)) {
        throw error("option protobufEncoding='" + t.raw(o, "protobufEncoding") + "' is not one of "
            + String.join(", ", values("protobufEncoding")) + " (json: protobuf's canonical JSON mapping)");
      }
      out.put("protobuf_encoding", encoding);
    }
    String depth = given(t, o, "protobufRecursiveDepth");
    if (depth != null) {
      out.put("protobuf_recursive_depth", Long.toString(t.number(o, "protobufRecursiveDepth", 0)));
    }
    return out;
  }

  /** What the decoder is called in messages. */
  String what() {
    if ("avro".equals(format)) {
      return "option avroSchema";
    }
    if ("protobuf".equals(format)) {
      return "protobuf message " + moduleOptions.get("protobuf_message");
    }
    return "decoder " + decoderPath;
  }
}
