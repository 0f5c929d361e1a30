package io.pubsubgo.spark.sink;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.Test;

/** The sink's inline credentials and other connectors' names, from the option table. */
class SinkCredentialsTest {
  private static final String SECRET = "TOPSECRET-sink";

  private static SinkOptions opts(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return new SinkOptions(new CaseInsensitiveStringMap(m), false);
  }

  @Test
  void credentialsJsonReachesThePublisherAndNoError() {
    String key = "{\"type\":\"service_account\",\"client_email\":\"w@p.iam.gserviceaccount.com\","
        + "\"private_key\":\"" + SECRET + "\"}";
    SinkOptions o = opts("pubsublite.topic", "projects/p/locations/us-east1-b/topics/t", "credentialsJson", key);
    String config = o.publisherConfig(o.topic);
    assertTrue(config.contains("\"credentials_json\"") && config.contains(SECRET));
    assertTrue(o.topic.equals("projects/p/topics/t"), o.topic); // the Lite location dropped
    String e = assertThrows(IllegalArgumentException.class,
        () -> opts("topicId", "projects/p/topics/t", "credentialsJson", "{" + SECRET)).getMessage();
    assertTrue(e.contains("option credentialsJson is not valid JSON"), e);
    assertFalse(e.contains(SECRET), e);
  }
}
