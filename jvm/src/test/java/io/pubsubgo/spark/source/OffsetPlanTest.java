package io.pubsubgo.spark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** maxRecordsPerTrigger split over a batch's tasks: the caps add up to the limit, never more. */
class OffsetPlanTest {
  private static long sum(PubsubGoOffset o) {
    long n = 0;
    for (int i = 0; i < o.partitions; i++) {
      assertTrue(o.rowsOf(i) >= 1 && o.rowsOf(i) <= o.rowsPerPartition, "task " + i + ": " + o.rowsOf(i));
      n += o.rowsOf(i);
    }
    return n;
  }

  @Test
  void aLimitThatDoesNotDivideIsNeverExceeded() {
    PubsubGoOffset o = PubsubGoOffset.limited(4, 3, 200_000, 500);
    assertEquals(3, o.partitions);
    assertEquals(500, sum(o));
    assertEquals(167, o.rowsOf(0));
    assertEquals(166, o.rowsOf(2));
  }

  @Test
  void fewerRowsThanTasksPlanFewerTasks() {
    PubsubGoOffset o = PubsubGoOffset.limited(0, 8, 200_000, 3);
    assertEquals(3, o.partitions);
    assertEquals(3, sum(o));
  }

  @Test
  void theTaskCapStillHolds() {
    PubsubGoOffset o = PubsubGoOffset.limited(0, 2, 100, 1_000);
    assertEquals(200, sum(o));
  }

  @Test
  void theSplitSurvivesTheCheckpoint() {
    PubsubGoOffset o = PubsubGoOffset.limited(7, 3, 200_000, 2_999);
    PubsubGoOffset back = PubsubGoOffset.parse(o.json());
    assertEquals(o.json(), back.json());
    assertEquals(2_999, sum(back));
    PubsubGoOffset old = PubsubGoOffset.parse(
        "{\"frontEnd\":\"jvm\",\"batch\":3,\"partitions\":2,\"rowsPerPartition\":1500}");
    assertEquals(1500, old.rowsOf(1)); // an offset written before the limit was kept: its plan as it was
  }
}
