"""The source's progress figures, from the tasks' published stats (no Spark)."""

from __future__ import annotations

from pubsub_go.spark.read.driver.figures import Figures
from pubsub_go.spark.read.driver.logged_batches import EntryInfo
from pubsub_go.spark.read.driver.offsets import BatchOffset


def test_stall_figures_sum_per_task_and_take_the_longest_current_stall():
    """A stalled subscriber pulls nothing, as an empty subscription does:
    the batch says for how long its subscribers could not receive."""
    fig = Figures()
    tasks = [{"rows": 3, "flow_full_ms": 700, "streams_down_ms": 20, "blocked_ms": 650},
             {"rows": 0, "flow_full_ms": 0, "streams_down_ms": 4000, "blocked_ms": 3900}]
    fig.summarize("g", 1, [EntryInfo(f"e{i}", t["rows"], t) for i, t in enumerate(tasks)])
    tasks = [{"rows": 5, "flow_full_ms": 100, "streams_down_ms": 0, "blocked_ms": 0}]
    fig.summarize("g", 2, [EntryInfo("e2", 5, tasks[0])])
    out = fig.report(BatchOffset(gen="g", batch=2), [], ack_on_commit=True)
    # The growing ones: summed over the tasks and over the query.
    assert (out["flowFullMs"], out["streamsDownMs"]) == (800, 4020), out
    # The current one: the last batch's, the longest of its tasks.
    assert out["blockedMs"] == 0, out
    last = out["lastBatch"]
    assert (last["flow_full_ms"], last["streams_down_ms"], last["blocked_ms"]) == (100, 0, 0), last
    assert fig.known_summary("g", 1).stats["blocked_ms"] == 3900
    assert fig.known_summary("g", 1).stats["streams_down_ms"] == 4020
