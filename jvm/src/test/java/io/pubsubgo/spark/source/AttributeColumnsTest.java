package io.pubsubgo.spark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pubsubgo.spark.bridge.Library;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.Test;

/** attributeColumns and timestampAttribute: the options, the columns, the event times. */
class AttributeColumnsTest {
  private static SourceOptions opts(String... kv) {
    Map<String, String> m = new HashMap<>();
    m.put("subscriptionId", "projects/p/subscriptions/s");
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return new SourceOptions(new CaseInsensitiveStringMap(m));
  }

  private static String fails(String... kv) {
    return assertThrows(IllegalArgumentException.class, () -> opts(kv)).getMessage();
  }

  @Test
  void theColumnsFollowTheRawOnes() {
    StructType s = SourceSchema.raw(opts("attributeColumns", " region, source ,", "timestampAttribute", "ts"));
    int raw = Library.rawSchema().size();
    assertEquals(raw + 3, s.size());
    assertEquals("region", s.fields()[raw].name());
    assertEquals("source", s.fields()[raw + 1].name());
    assertEquals("event_time", s.fields()[raw + 2].name()); // the table's default timestampColumn
    assertEquals(DataTypes.TimestampType, s.fields()[raw + 2].dataType());
    assertEquals("et", SourceSchema.raw(opts("timestampAttribute", "ts", "timestampColumn", "et")).fields()[raw].name());
    assertNull(opts().derived);
  }

  @Test
  void badColumnsFailNamingTheOption() {
    assertTrue(fails("timestampColumn", "et").contains("timestampColumn is set but timestampAttribute is not"));
    assertTrue(fails("attributeColumns", "a b").contains("'a b' is not a usable column name"));
    assertTrue(fails("attributeColumns", "a,a").contains("column 'a' is named twice"));
    assertTrue(fails("attributeColumns", "payload").contains("column 'payload' is already a column filled"));
    assertTrue(fails("attributeColumns", "a", "format", "json").contains("in schema mode (format/decoder)"));
  }

  @Test
  void eventTimesAreEpochMillisecondsOrRfc3339() {
    assertEquals(Long.valueOf(1_700_000_000_123_000L), AttributeColumns.eventTime("1700000000123"));
    assertEquals(Long.valueOf(-1000L), AttributeColumns.eventTime("-1"));
    assertEquals(Long.valueOf(1_700_000_000_123_456L), AttributeColumns.eventTime("2023-11-14T22:13:20.123456789Z"));
    assertEquals(Long.valueOf(1_700_000_000_000_000L), AttributeColumns.eventTime("2023-11-14 23:13:20+01:00"));
    assertNull(AttributeColumns.eventTime("2023-11-14T22:13:20")); // no zone
    assertNull(AttributeColumns.eventTime("soon"));
    assertNull(AttributeColumns.eventTime("1.5"));
  }
}
