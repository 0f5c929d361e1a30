package io.pubsubgo.spark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.Test;

/** Options from the shared table, and offsets of the other front end. */
class OptionTableTest {
  private static CaseInsensitiveStringMap opts(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return new CaseInsensitiveStringMap(m);
  }

  @Test
  void durationsAreReadAsSparkWritesThem() {
    assertEquals(Long.valueOf(1500), OptionTable.duration("1.5s", "ms"));
    assertEquals(Long.valueOf(120), OptionTable.duration("2 minutes", "s"));
    assertEquals(Long.valueOf(20), OptionTable.duration("20", "ms"));
    assertNull(OptionTable.duration("1500ms", "s")); // not a whole number of seconds
    assertNull(OptionTable.duration("soon", "ms"));
  }

  @Test
  void defaultsAndRangesComeFromTheTableAndTheContract() {
    SourceOptions o = new SourceOptions(opts("subscriptionId", "projects/p/subscriptions/s"));
    assertEquals(4000, o.batchSize);
    assertEquals(600, o.commitLeaseSeconds);
    assertEquals(1, o.streamsPerPartition); // the Go contract's default
    assertNull(o.maxRecordsPerTrigger);
    SourceOptions d = new SourceOptions(opts("subscriptionId", "s", "projectId", "p", "maxWaitTimeMs", "1s",
        "credentialsFile", "/k.json"));
    assertEquals("projects/p/subscriptions/s", d.subscription);
    assertEquals(1000, d.maxWaitTimeMs);
    assertEquals("/k.json", d.credentialsFile); // this project's own alias
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new SourceOptions(opts("subscriptionId", "projects/p/subscriptions/s", "batchSize", "0")));
    assertTrue(e.getMessage().contains("1..1000000"), e.getMessage());
  }

  @Test
  void theLastReadOptionsOfThePythonSourceAreTaken() throws Exception {
    String sub = "projects/p/subscriptions/s";
    SourceOptions o = new SourceOptions(opts("subscriptionId", sub));
    assertEquals(8, o.catchUpStreamsPerPartition); // the table's default
    assertNull(o.idWindow);
    assertEquals(8, new com.fasterxml.jackson.databind.ObjectMapper().readTree(o.subscriberConfig(100, 0))
        .get("catch_up_streams").asInt());
    assertEquals(1000, CatchUp.LAG_MS); // the contract's catch_up_lag_ms
    SourceOptions d = new SourceOptions(opts("subscriptionId", sub, "idAttribute", "uid",
        "catchUpStreamsPerPartition", "3"));
    assertEquals(3, d.catchUpStreamsPerPartition);
    assertEquals("uid", d.idWindow.attribute);
    assertEquals(600, d.idWindow.windowSeconds); // the table's default
    assertEquals(120, new SourceOptions(opts("subscriptionId", sub, "idAttribute", "uid",
        "idAttributeWindowSeconds", "2 minutes")).idWindow.windowSeconds);
    for (String[] bad : new String[][] {{"idAttributeWindowSeconds", "60"}, {"catchUpStreamsPerPartition", "65"},
        {"idAttribute", "uid", "idAttributeWindowSeconds", "0"}}) {
      String[] kv = new String[bad.length + 2];
      kv[0] = "subscriptionId";
      kv[1] = sub;
      System.arraycopy(bad, 0, kv, 2, bad.length);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new SourceOptions(opts(kv)));
      assertTrue(e.getMessage().contains(bad[bad.length - 2]), e.getMessage());
    }
  }

  @Test
  void aPythonFrontEndsOffsetIsRefusedNamingIt() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> PubsubGoOffset.parse("{\"gen\":\"ab12\",\"batch\":3,\"run\":\"x\"}"));
    assertTrue(e.getMessage().contains("Python front end"), e.getMessage());
    PubsubGoOffset o = PubsubGoOffset.parse(new PubsubGoOffset(7, 2, 100).json());
    assertEquals(7, o.batch);
    assertEquals(2, o.partitions);
  }
}
