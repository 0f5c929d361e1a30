package io.pubsubgo.spark.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The option table both front ends read (python/pubsub_go/_options.json,
 * copied into the jar by jvm/build.sh, with the Go contract it refers to):
 * names, aliases, defaults and ranges live there, not here. This class
 * only resolves an option's value from what the user gave, with the
 * errors the Python front end gives for the same mistakes.
 */
public final class OptionTable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNode TABLE = load("/io/pubsubgo/options.json");
  private static final JsonNode CONTRACT = load("/io/pubsubgo/contract.json");

  private static JsonNode load(String resource) {
    try (InputStream in = OptionTable.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("pubsub-go: the jar lacks " + resource + " (built by jvm/build.sh)");
      }
      return JSON.readTree(in);
    } catch (IOException e) {
      throw new IllegalStateException("pubsub-go: reading " + resource + ": " + e, e);
    }
  }

  /** Options Spark itself passes a data source with the user's (a streaming query's). */
  private static final java.util.Set<String> SPARK_OWN = new java.util.HashSet<>(
      Arrays.asList("checkpointlocation"));

  private final String side;
  private final Map<String, JsonNode> rows = new HashMap<>(); // lower-cased name or own alias -> row

  public OptionTable(String side) {
    this.side = side;
    for (JsonNode row : TABLE.get("options")) {
      boolean mine = false;
      for (JsonNode s : row.get("sides")) {
        mine |= side.equals(s.asText());
      }
      if (!mine) {
        continue;
      }
      rows.put(lower(row.get("name").asText()), row);
      for (JsonNode a : row.path("aliases")) {
        rows.put(lower(a.get("name").asText()), row);
      }
    }
  }

  private static String lower(String s) {
    return s.toLowerCase(Locale.ROOT);
  }

  private JsonNode row(String name) {
    JsonNode r = rows.get(lower(name));
    if (r == null || !r.get("name").asText().equals(name)) {
      throw new IllegalStateException("pubsub-go: " + name + " is not a " + side + " option of the table");
    }
    return r;
  }

  /**
   * Checks the given options: each must be in the table (as its name or
   * any alias: our own second spelling, or another connector's name for
   * it) and supported by this front end, else an error naming it and what
   * is accepted.
   */
  public void check(CaseInsensitiveStringMap given, List<String> supported) {
    TreeSet<String> ok = new TreeSet<>();
    for (String s : supported) {
      ok.add(lower(s));
    }
    for (String key : given.keySet()) {
      if (SPARK_OWN.contains(lower(key))) {
        continue;
      }
      for (JsonNode ref : TABLE.path("refused")) {
        String n = lower(ref.get("name").asText());
        if (n.endsWith(".") ? lower(key).startsWith(n) : lower(key).equals(n)) {
          throw new IllegalArgumentException("pubsub-go: option " + key + " (" + ref.get("origin").asText()
              + ") is not accepted: " + ref.get("why").asText());
        }
      }
      JsonNode r = rows.get(lower(key));
      if (r == null) {
        throw new IllegalArgumentException("pubsub-go: unknown " + side + " option " + key + "; the JVM source accepts "
            + String.join(", ", supportedNames(supported)) + " (docs/jvm.md)");
      }
      String name = r.get("name").asText();
      if (!ok.contains(lower(name)) && r.hasNonNull("jvm_refused")) {
        throw new IllegalArgumentException("pubsub-go: option " + key + (lower(key).equals(lower(name)) ? ""
            : " (" + name + ")") + " is not taken by the JVM front end: " + r.get("jvm_refused").asText());
      }
      if (!ok.contains(lower(name))) {
        throw new IllegalArgumentException("pubsub-go: option " + key + (lower(key).equals(lower(name)) ? ""
            : " (" + name + ")") + " is not supported by the JVM front end yet (docs/jvm.md, \"Options\"); use it "
            + "without the jar on the classpath (Spark 4.x)");
      }
    }
  }

  /** This side's options that mean something only under condition (the table's "requires"). */
  public List<String> requiring(String condition) {
    List<String> out = new ArrayList<>();
    for (JsonNode row : TABLE.get("options")) {
      if (condition.equals(row.path("requires").asText(null)) && rows.get(lower(row.get("name").asText())) == row) {
        out.add(row.get("name").asText());
      }
    }
    return out;
  }

  private List<String> supportedNames(List<String> supported) {
    List<String> out = new ArrayList<>();
    for (String s : supported) {
      out.add(row(s).get("name").asText());
    }
    return out;
  }

  /**
   * The text the user gave for name, through our name or any alias (its
   * value converted as the table says), or null. Two names of one option
   * given with different values is an error naming both (and, for a
   * secret, neither value).
   */
  public String raw(CaseInsensitiveStringMap given, String name) {
    JsonNode r = row(name);
    List<String[]> found = new ArrayList<>(); // {the name given, its value in our terms}
    if (given.containsKey(name)) {
      found.add(new String[] {name, given.get(name)});
    }
    for (JsonNode a : r.path("aliases")) {
      String an = a.get("name").asText();
      String convert = a.path("convert").isTextual() ? a.get("convert").asText() : null;
      if (CREDENTIAL_PARTS.equals(convert) || !given.containsKey(an)) {
        continue; // the parts make one key together (databricksKey)
      }
      String v = given.get(an);
      found.add(new String[] {an, convert != null && !v.trim().isEmpty() ? convert(convert, an, v) : v});
    }
    String key = databricksKey(given, r);
    if (key != null) {
      found.add(new String[] {String.join("/", credentialParts(r).keySet()), key});
    }
    if (found.isEmpty()) {
      return null;
    }
    TreeSet<String> values = new TreeSet<>();
    List<String> shown = new ArrayList<>();
    for (String[] f : found) {
      values.add(f[1].trim());
      shown.add(isSecret(r) ? f[0] : f[0] + "='" + f[1] + "'");
    }
    if (values.size() > 1) {
      throw new IllegalArgumentException("pubsub-go: options " + String.join(" and ", shown) + " set the same option ("
          + name + ") with different values; set one");
    }
    return found.get(0)[1];
  }

  /** The name the user wrote for option name, for errors about its value: ours, or the alias and what it sets. */
  private String label(CaseInsensitiveStringMap given, String name) {
    if (given.containsKey(name)) {
      return name;
    }
    for (JsonNode a : row(name).path("aliases")) {
      String an = a.get("name").asText();
      if (given.containsKey(an)) {
        return "pubsub-go".equals(a.get("origin").asText()) ? an : an + " (" + an + " sets our option " + name + ")";
      }
    }
    return name;
  }

  private static boolean isSecret(JsonNode row) {
    return row.path("secret").asBoolean(false);
  }

  private static final String CREDENTIAL_PARTS = "databricks_service_credential";

  /** The Databricks service-credential options -> the key file's field each fills (the table's "part"). */
  private static Map<String, String> credentialParts(JsonNode row) {
    Map<String, String> out = new java.util.LinkedHashMap<>();
    for (JsonNode a : row.path("aliases")) {
      if (CREDENTIAL_PARTS.equals(a.path("convert").asText(null))) {
        out.put(a.get("name").asText(), a.get("part").asText());
      }
    }
    return out;
  }

  /** Databricks' service-credential fields, which together are a service-account key; null when none is given. */
  private static String databricksKey(CaseInsensitiveStringMap given, JsonNode row) {
    Map<String, String> parts = credentialParts(row);
    ObjectNode doc = JSON.createObjectNode();
    List<String> missing = new ArrayList<>();
    for (Map.Entry<String, String> p : parts.entrySet()) {
      String v = given.get(p.getKey());
      if (v == null || v.trim().isEmpty()) {
        missing.add(p.getKey());
      } else {
        doc.put(p.getValue(), "private_key".equals(p.getValue()) ? v : v.trim());
      }
    }
    if (missing.size() == parts.size()) {
      return null;
    }
    if (!missing.isEmpty()) {
      throw new IllegalArgumentException("pubsub-go: options " + String.join(", ", parts.keySet()) + " (Databricks' "
          + "service credential) go together: " + String.join(", ", missing) + " missing (or give the key file's "
          + "JSON as credentialsJson)");
    }
    String pem = doc.get("private_key").asText();
    if (!pem.contains("\n")) { // a key pasted on one line with its newlines escaped
      pem = pem.replace("\\n", "\n");
    }
    if (!pem.replaceAll("^\\s+", "").startsWith("-----BEGIN")) {
      throw new IllegalArgumentException("pubsub-go: option privateKey is not a PEM private key; expected the "
          + "private_key of a service-account key file (-----BEGIN PRIVATE KEY----- ...)");
    }
    doc.put("private_key", pem);
    doc.put("type", "service_account");
    doc.put("token_uri", "https://oauth2.googleapis.com/token");
    return doc.toString();
  }

  /** The table's value converters, by the name its aliases give (python/pubsub_go/spark/aliases.py's). */
  private static String convert(String converter, String alias, String v) {
    switch (converter) {
      case "lite_subscription_path": return litePath(v, "subscription");
      case "lite_topic_path": return litePath(v, "topic");
      case "base64_credentials": {
        byte[] text;
        try {
          text = Base64.getDecoder().decode(v.replaceAll("\\s", ""));
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("pubsub-go: option " + alias + " is not valid base64; expected a "
              + "credentials JSON file encoded in base64 (e.g. base64 -w0 key.json), or give the JSON itself as "
              + "credentialsJson");
        }
        return credentialsJson(new String(text, StandardCharsets.UTF_8), alias + " (base64-decoded)");
      }
      default:
        throw new IllegalStateException("pubsub-go: the option table names converter " + converter
            + ", which this jar lacks");
    }
  }

  /** Pub/Sub Lite paths carry a location; Pub/Sub resources are global: the location is dropped. */
  private static String litePath(String raw, String kind) {
    String[] p = raw.trim().split("/", -1);
    if (p.length == 6 && "projects".equals(p[0]) && "locations".equals(p[2]) && (kind + "s").equals(p[4])) {
      return "projects/" + p[1] + "/" + kind + "s/" + p[5];
    }
    return raw;
  }

  /**
   * Inline credentials, checked without ever quoting them in an error (as
   * the Python front end's optparse._credentials_json): a JSON object with
   * a "type", a service-account key with its private_key and client_email.
   */
  static String credentialsJson(String raw, String name) {
    String text = raw.trim();
    JsonNode doc;
    try {
      doc = JSON.readTree(text);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      long at = e.getLocation() != null ? e.getLocation().getCharOffset() : -1;
      throw new IllegalArgumentException("pubsub-go: option " + name + " is not valid JSON (error at character "
          + at + "); expected the content of a credentials JSON file, e.g. a service-account key");
    }
    if (doc == null || !doc.isObject() || doc.path("type").asText("").isEmpty()) {
      throw new IllegalArgumentException("pubsub-go: option " + name + " must be a credentials JSON object with a "
          + "\"type\", e.g. a service-account key (\"type\": \"service_account\")");
    }
    if ("service_account".equals(doc.get("type").asText()) && (doc.path("private_key").asText("").isEmpty()
        || doc.path("client_email").asText("").isEmpty())) {
      throw new IllegalArgumentException("pubsub-go: option " + name + ": a service_account key needs private_key "
          + "and client_email");
    }
    return text;
  }

  /**
   * The credentials JSON given inline (credentialsJson or its aliases),
   * checked, or null; exclusive with a credentials file (credentials).
   */
  public String credentialsJson(CaseInsensitiveStringMap given) {
    String inline = raw(given, "credentialsJson");
    if (inline == null || inline.trim().isEmpty()) {
      return null;
    }
    if (raw(given, "credentials") != null) {
      throw new IllegalArgumentException("pubsub-go: set one of the options credentials (alias credentialsFile: a "
          + "path) and credentialsJson (the JSON itself)");
    }
    return credentialsJson(inline, "credentialsJson");
  }

  public String string(CaseInsensitiveStringMap given, String name) {
    String v = raw(given, name);
    if (v != null) {
      return v;
    }
    JsonNode d = row(name).get("default");
    return d == null || d.isNull() ? null : d.asText();
  }

  /** A bool option: true or false (any case). */
  public boolean bool(CaseInsensitiveStringMap given, String name) {
    String v = string(given, name);
    if (v == null) {
      return false;
    }
    switch (lower(v.trim())) {
      case "true": return true;
      case "false": return false;
      default:
        throw new IllegalArgumentException("pubsub-go: option " + label(given, name) + " is " + v + "; expected true or false");
    }
  }

  /** An enum option: one of its values (or its contract list's), as given; null when not set. */
  public String choice(CaseInsensitiveStringMap given, String name) {
    String v = string(given, name);
    if (v == null) {
      return null;
    }
    JsonNode r = row(name);
    JsonNode values = r.has("values_contract") ? CONTRACT.path(r.get("values_contract").asText()) : r.path("values");
    List<String> ok = new ArrayList<>();
    for (JsonNode x : values) {
      ok.add(x.asText());
      if (lower(x.asText()).equals(lower(v.trim()))) {
        return x.asText();
      }
    }
    throw new IllegalArgumentException("pubsub-go: option " + label(given, name) + " is " + v + "; expected one of "
        + String.join(", ", ok));
  }

  /** The table's default (a literal, or the contract's), or null for "not set". */
  Long defaultOf(String name) {
    JsonNode r = row(name);
    JsonNode c = contractField(r.path("default_contract").asText(null));
    if (c != null && c.has("default")) {
      return c.get("default").asLong();
    }
    JsonNode d = r.get("default");
    return d == null || d.isNull() ? null : d.asLong();
  }

  /** A contract field's default (ref: "section.field"), for a value the front end passes to no option. */
  static long contractDefault(String ref) {
    JsonNode c = contractField(ref);
    if (c == null || !c.has("default")) {
      throw new IllegalStateException("pubsub-go: the contract's " + ref + " has no default");
    }
    return c.get("default").asLong();
  }

  /** A plain limit of the contract, {@code section.name} (e.g. source_task_limits). */
  static long contractLimit(String section, String name) {
    JsonNode v = CONTRACT.path(section).path(name);
    if (!v.isNumber()) {
      throw new IllegalStateException("pubsub-go: the contract lacks " + section + "." + name);
    }
    return v.asLong();
  }

  private static JsonNode contractField(String ref) {
    if (ref == null) {
      return null;
    }
    String[] p = ref.split("\\.", 2);
    for (JsonNode f : CONTRACT.path(p[0])) {
      if (p[1].equals(f.path("name").asText())) {
        return f;
      }
    }
    throw new IllegalStateException("pubsub-go: the option table refers to " + ref + ", which the contract lacks");
  }

  long min(String name) {
    JsonNode r = row(name);
    if (r.has("min") && !r.get("min").isNull()) {
      return r.get("min").asLong();
    }
    JsonNode c = contractField(r.path("range_contract").asText(null));
    return c != null && c.has("min") ? c.get("min").asLong() : Long.MIN_VALUE;
  }

  long max(String name) {
    JsonNode r = row(name);
    if (r.has("max") && !r.get("max").isNull()) {
      return r.get("max").asLong();
    }
    JsonNode c = contractField(r.path("range_contract").asText(null));
    return c != null && c.has("max") ? c.get("max").asLong() : Long.MAX_VALUE;
  }

  /** An int, long or duration option in its own unit; dflt when neither given nor defaulted. */
  public long number(CaseInsensitiveStringMap given, String name, long dflt) {
    String v = raw(given, name);
    Long d = defaultOf(name);
    if (v == null) {
      return d == null ? dflt : d;
    }
    JsonNode r = row(name);
    String unit = r.path("unit").asText("");
    Long n = "duration".equals(r.get("type").asText()) ? duration(v, unit) : integer(v);
    long lo = min(name);
    long hi = max(name);
    if (n == null) {
      throw new IllegalArgumentException("pubsub-go: option " + label(given, name) + " is " + v + "; expected "
          + ("duration".equals(r.get("type").asText())
              ? "an integer in " + ("s".equals(unit) ? "seconds" : "milliseconds")
                  + ", or a number with a unit: 500ms, 10s, 2 minutes, 1.5h"
              : "an integer") + range(lo, hi));
    }
    if (n < lo || n > hi) {
      throw new IllegalArgumentException("pubsub-go: option " + label(given, name) + " is " + v + "; expected" + range(lo, hi)
          + (r.has("range_note") ? " (" + r.get("range_note").asText() + ")" : ""));
    }
    return n;
  }

  private static String range(long lo, long hi) {
    if (lo == Long.MIN_VALUE && hi == Long.MAX_VALUE) {
      return "";
    }
    return " in " + (lo == Long.MIN_VALUE ? "" : Long.toString(lo)) + ".." + (hi == Long.MAX_VALUE ? "" : Long.toString(hi));
  }

  private static Long integer(String v) {
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static final Pattern FORM = Pattern.compile("^\\s*(\\d+(?:\\.\\d+)?)\\s*([a-zA-Z]*)\\s*$");

  /** Spark's duration forms (python/pubsub_go/spark/durations.py says the same). */
  static Long duration(String v, String unit) {
    Matcher m = FORM.matcher(v);
    if (!m.matches()) {
      return null;
    }
    BigDecimal number = new BigDecimal(m.group(1));
    String suffix = lower(m.group(2));
    if (suffix.isEmpty()) {
      return number.stripTrailingZeros().scale() <= 0 ? number.longValueExact() : null;
    }
    BigDecimal us = unitMicros(suffix);
    if (us == null) {
      return null;
    }
    BigDecimal per = "s".equals(unit) ? BigDecimal.valueOf(1_000_000) : BigDecimal.valueOf(1_000);
    BigDecimal[] qr = number.multiply(us).divideAndRemainder(per);
    return qr[1].signum() == 0 ? qr[0].longValueExact() : null;
  }

  private static BigDecimal unitMicros(String s) {
    switch (s) {
      case "us": case "usec": case "microsecond": case "microseconds": return BigDecimal.ONE;
      case "ms": case "msec": case "millisecond": case "milliseconds": return BigDecimal.valueOf(1_000);
      case "s": case "sec": case "secs": case "second": case "seconds": return BigDecimal.valueOf(1_000_000);
      case "m": case "min": case "mins": case "minute": case "minutes": return BigDecimal.valueOf(60_000_000L);
      case "h": case "hr": case "hrs": case "hour": case "hours": return BigDecimal.valueOf(3_600_000_000L);
      case "d": case "day": case "days": return BigDecimal.valueOf(86_400_000_000L);
      default: return null;
    }
  }
}
