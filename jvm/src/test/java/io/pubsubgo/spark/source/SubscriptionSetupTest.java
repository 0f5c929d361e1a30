package io.pubsubgo.spark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.Test;

/** topicId's settings and the start position: what the options say, and their errors. */
class SubscriptionSetupTest {
  private static SubscriptionSetup setup(String... kv) {
    Map<String, String> m = new HashMap<>();
    m.put("subscriptionId", "s");
    m.put("projectId", "p");
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return new SourceOptions(new CaseInsensitiveStringMap(m)).setup;
  }

  private static String fails(String... kv) {
    return assertThrows(IllegalArgumentException.class, () -> setup(kv)).getMessage();
  }

  @Test
  void topicIdCarriesTheSettingsOfTheSubscriptionToCreate() {
    SubscriptionSetup s = setup("topicId", "t", "filter", " attributes.k = \"v\" ", "messageRetentionSeconds", "2h",
        "subscriptionDeadLetterTopicId", "projects/q/topics/dlq", "maxDeliveryAttempts", "9",
        "enableExactlyOnceDelivery", "true", "retainAckedMessages", "TRUE", "deleteSubscriptionOnStreamStop", "true");
    assertEquals("projects/p/topics/t", s.topic);
    assertEquals("attributes.k = \"v\"", s.filter);
    assertEquals(7200, s.messageRetentionSeconds);
    assertEquals("projects/q/topics/dlq", s.deadLetterTopic);
    assertEquals(9, s.maxDeliveryAttempts);
    assertTrue(s.exactlyOnce && s.retainAcked && s.deleteOnStop);
    assertFalse(s.ordering);
    SubscriptionSetup none = setup();
    assertNull(none.topic);
    assertEquals(5, setup("topicId", "t").maxDeliveryAttempts); // the table's default
    assertFalse(none.deleteOnStop);
  }

  @Test
  void creationSettingsWithoutTopicIdFailNamingThem() {
    assertTrue(fails("filter", "x").contains("option filter only applies when the source creates the subscription"));
    assertTrue(fails("retainAckedMessages", "true").contains("retainAckedMessages only applies"));
    assertTrue(fails("topicId", "t", "maxDeliveryAttempts", "5").contains("needs subscriptionDeadLetterTopicId"));
    assertTrue(fails("topicId", "a/b").contains("topic id 'a/b' is invalid"));
    assertTrue(fails("topicId", "t", "maxDeliveryAttempts", "1", "subscriptionDeadLetterTopicId", "d")
        .contains("maxDeliveryAttempts is 1"));
  }

  @Test
  void startingTimestampTakesItsForms() {
    assertEquals(Long.valueOf(1735689600000L), setup("startingTimestamp", "1735689600000").startMs);
    assertEquals(Long.valueOf(1735689600000L), setup("startingTimestamp", "2025-01-01T00:00:00Z").startMs);
    assertEquals(Long.valueOf(1735689600000L), setup("startingTimestamp", "2025-01-01T01:00:00+01:00").startMs);
    assertEquals(Long.valueOf(1735689600000L), setup("startingTimestamp", "2025-01-01 00:00:00").startMs); // UTC
    assertEquals(Long.valueOf(7_200_000L), setup("startingTimestamp", "-2 hours").startBeforeMs);
    assertEquals(Long.valueOf(1_800_000L), setup("startingTimestamp", "-30m").startBeforeMs);
    assertEquals("projects/p/snapshots/n", setup("startingSnapshot", "n").startSnapshot);
    assertTrue(fails("startingTimestamp", "-3 fortnights").contains("unknown unit 'fortnight'"));
    assertTrue(fails("startingTimestamp", "soon").contains("startingTimestamp='soon' is not understood"));
    assertTrue(fails("startingTimestamp", "1", "startingSnapshot", "n").contains("are exclusive"));
  }
}
