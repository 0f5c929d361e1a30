package io.pubsubgo.spark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.Test;

/** Other connectors' option names and inline credentials, as the option table gives them. */
class OptionAliasesTest {
  private static final String SUB = "projects/p/subscriptions/s";
  private static final String SECRET = "TOPSECRET-7f3a";
  private static final String KEY = "{\"type\":\"service_account\",\"client_email\":\"r@p.iam.gserviceaccount.com\","
      + "\"private_key\":\"-----BEGIN PRIVATE KEY-----\\n" + SECRET + "\\n-----END PRIVATE KEY-----\\n\"}";

  private static CaseInsensitiveStringMap opts(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return new CaseInsensitiveStringMap(m);
  }

  private static IllegalArgumentException fails(String... kv) {
    return assertThrows(IllegalArgumentException.class, () -> new SourceOptions(opts(kv)));
  }

  @Test
  void otherConnectorsNamesSetOurOptions() {
    SourceOptions o = new SourceOptions(opts("pubsublite.subscription", "projects/p/locations/us-east1-b/subscriptions/s",
        "numFetchPartitions", "3", "maxOffsetsPerTrigger", "500", "maxFetchPeriod", "4s", "maxRecordsPerFetch", "70"));
    assertEquals(SUB, o.subscription); // the Lite location dropped
    assertEquals(3, o.numPartitions);
    assertEquals(Long.valueOf(500), o.maxRecordsPerTrigger);
    assertEquals(4000, o.maxBatchDurationMs);
    assertEquals(70, o.maxRecordsPerPartition);
    assertEquals(2, new SourceOptions(opts("subscriptionId", SUB, "minPartitions", "2", "parallelism", "2"))
        .numPartitions); // two names, one value: fine
  }

  @Test
  void twoNamesOfOneOptionWithDifferentValuesFailNamingBoth() {
    IllegalArgumentException e = fails("subscriptionId", SUB, "numPartitions", "2", "minPartitions", "4");
    assertTrue(e.getMessage().contains("numPartitions='2'") && e.getMessage().contains("minPartitions='4'")
        && e.getMessage().contains("(numPartitions)"), e.getMessage());
  }

  @Test
  void aBadValueThroughAnAliasNamesTheAliasAndOurOption() {
    IllegalArgumentException e = fails("subscriptionId", SUB, "maxOffsetsPerTrigger", "lots");
    assertTrue(e.getMessage().contains("option maxOffsetsPerTrigger (maxOffsetsPerTrigger sets our option "
        + "maxRecordsPerTrigger) is lots"), e.getMessage());
  }

  @Test
  void credentialsJsonIsCheckedWithoutShowingIt() {
    assertEquals(KEY, new SourceOptions(opts("subscriptionId", SUB, "credentialsJson", KEY)).credentialsJson);
    for (String bad : new String[] {"{\"type\": " + SECRET, "[\"" + SECRET + "\"]",
        "{\"type\":\"service_account\",\"private_key\":\"" + SECRET + "\"}"}) {
      IllegalArgumentException e = fails("subscriptionId", SUB, "credentialsJson", bad);
      assertTrue(e.getMessage().contains("option credentialsJson"), e.getMessage());
      assertFalse(e.getMessage().contains(SECRET), e.getMessage());
    }
    IllegalArgumentException both = fails("subscriptionId", SUB, "credentialsJson", KEY, "credentials", "/k.json");
    assertTrue(both.getMessage().contains("set one of the options credentials"), both.getMessage());
    IllegalArgumentException two = fails("subscriptionId", SUB, "credentialsJson", KEY, "gcp.credentials.key",
        Base64.getEncoder().encodeToString(KEY.replace(SECRET, SECRET + "x").getBytes(StandardCharsets.UTF_8)));
    assertTrue(two.getMessage().contains("credentialsJson and gcp.credentials.key set the same option"),
        two.getMessage());
    assertFalse(two.getMessage().contains(SECRET), two.getMessage());
    // The secret is in the library's config only, not in what Spark shows of the source.
    SourceOptions o = new SourceOptions(opts("subscriptionId", SUB, "credentialsJson", KEY));
    assertTrue(o.subscriberConfig(10, 0).contains(SECRET));
    assertFalse(new PubsubGoScan(o, io.pubsubgo.spark.bridge.Library.rawSchema()).description().contains(SECRET));
  }

  @Test
  void pubsubLitesBase64KeyIsDecoded() {
    String b64 = Base64.getMimeEncoder().encodeToString(KEY.getBytes(StandardCharsets.UTF_8)); // wrapped lines
    assertEquals(KEY, new SourceOptions(opts("subscriptionId", SUB, "gcp.credentials.key", b64)).credentialsJson);
    IllegalArgumentException e = fails("subscriptionId", SUB, "gcp.credentials.key", SECRET + "!");
    assertTrue(e.getMessage().contains("gcp.credentials.key is not valid base64"), e.getMessage());
    assertFalse(e.getMessage().contains(SECRET), e.getMessage());
    IllegalArgumentException j = fails("subscriptionId", SUB, "gcp.credentials.key",
        Base64.getEncoder().encodeToString(("{" + SECRET).getBytes(StandardCharsets.UTF_8)));
    assertTrue(j.getMessage().contains("gcp.credentials.key (base64-decoded) is not valid JSON"), j.getMessage());
    assertFalse(j.getMessage().contains(SECRET), j.getMessage());
  }

  @Test
  void databricksCredentialFieldsMakeOneKey() throws Exception {
    SourceOptions o = new SourceOptions(opts("subscriptionId", SUB, "clientEmail", "r@p.iam.gserviceaccount.com",
        "clientId", "123", "privateKeyId", "abc", "privateKey",
        "-----BEGIN PRIVATE KEY-----\\n" + SECRET + "\\n-----END PRIVATE KEY-----\\n"));
    JsonNode k = new ObjectMapper().readTree(o.credentialsJson);
    assertEquals("service_account", k.get("type").asText());
    assertEquals("123", k.get("client_id").asText());
    assertEquals("abc", k.get("private_key_id").asText());
    assertTrue(k.get("private_key").asText().contains("\n" + SECRET + "\n")); // escaped newlines restored
    IllegalArgumentException e = fails("subscriptionId", SUB, "clientEmail", "r@p", "privateKey", SECRET);
    assertTrue(e.getMessage().contains("go together: clientId, privateKeyId missing"), e.getMessage());
    assertFalse(e.getMessage().contains(SECRET), e.getMessage());
    IllegalArgumentException pem = fails("subscriptionId", SUB, "clientEmail", "r@p", "clientId", "1",
        "privateKeyId", "a", "privateKey", SECRET);
    assertTrue(pem.getMessage().contains("privateKey is not a PEM private key"), pem.getMessage());
    assertFalse(pem.getMessage().contains(SECRET), pem.getMessage());
    assertNull(new SourceOptions(opts("subscriptionId", SUB)).credentialsJson);
  }
}
