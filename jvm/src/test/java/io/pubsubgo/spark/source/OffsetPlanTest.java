package io.pubsubgo.spark.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * maxRecordsPerTrigger split over a batch's tasks: the caps add up to the
 * limit, never more; maxBytesPerTrigger and the minimums split the same way,
 * and all of it survives the checkpoint.
 */
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

  @Test
  void byteLimitAndMinimumSplitOverTheTasksAndSurviveTheCheckpoint() {
    PubsubGoOffset o = PubsubGoOffset.limited(2, 3, 200_000, 900).bytes(1_000_000).minimum(600, 10_000, 1234);
    long bytes = 0;
    long minRows = 0;
    for (int i = 0; i < 3; i++) {
      bytes += o.shareOf(o.bytes, i);
      minRows += o.minRowsOf(i);
      assertTrue(o.minRowsOf(i) <= o.rowsOf(i));
    }
    assertEquals(1_000_000, bytes);
    assertEquals(600, minRows);
    PubsubGoOffset back = PubsubGoOffset.parse(o.json());
    assertEquals(o.json(), back.json());
    assertEquals(1234, back.waitUntilMs);
    assertEquals(3_334, back.shareOf(back.minBytes, 0));
    assertEquals(1, PubsubGoOffset.limited(0, 4, 100, 8).bytes(2).shareOf(2, 3)); // a task never gets a cap of 0
  }

  @Test
  void noMinimumWaitsForNothing() {
    PubsubGoOffset o = new PubsubGoOffset(1, 2, 100).minimum(PubsubGoOffset.NO_LIMIT, PubsubGoOffset.NO_LIMIT, 99);
    assertEquals(0, o.waitUntilMs);
    assertEquals(PubsubGoOffset.NO_LIMIT, o.minRowsOf(0));
    assertEquals(PubsubGoOffset.NO_LIMIT, o.shareOf(o.bytes, 1));
  }
}
