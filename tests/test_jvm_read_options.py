"""The JVM source's read options it took over from the Python source last
(docs/jvm.md, "Options"): catchUpStreamsPerPartition, on PySpark 3.5.7 and
4.3 with the jar, against Google's official emulator, Google's client as
the outside peer. One Spark application per version runs every scenario
in turn (tests/jvm/job.py with tests/jvm/source_steps.py), then each test
checks its part, as tests/test_jvm_front_end.py does.

The jar is the installed package's unless $PUBSUB_GO_TEST_JAR names another
(a build of this tree: jvm/build.sh --lib ... --out ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

import jvm_front_end
from jvm_front_end import VERSIONS, Job, batches

pytestmark = pytest.mark.timeout(1200)

CATCH_UP_BACKLOG, CATCH_UP_STREAMS, LIVE = 20_000, 4, 20


class Run:
    def __init__(self, line: str, result: dict, names: dict) -> None:
        self.line, self.result, self.names = line, result, names


@pytest.fixture(scope="module", params=VERSIONS)
def run(request, google, tmp_path_factory) -> Run:
    line = request.param
    tmp: Path = tmp_path_factory.mktemp(f"jvm-read-{line}")
    names: dict = {}
    names["catch_topic"], names["catch_sub"] = google.topic()
    # Published before the application starts: older than the library's catch-up lag (1 s) when read.
    names["catch_ids"] = google.publish(names["catch_topic"],
                                        [f"b{i}".encode() for i in range(CATCH_UP_BACKLOG)])
    steps = [
        {"kind": "catch_up", "key": "catch_up", "subscription": names["catch_sub"], "topic": names["catch_topic"],
         "out": str(tmp / "cu-out"), "checkpoint": str(tmp / "cu-ck"), "backlog": CATCH_UP_BACKLOG, "live": LIVE,
         "streams": 1, "options": {"numPartitions": 1, "catchUpStreamsPerPartition": CATCH_UP_STREAMS,
                                     # kept between tasks however long Spark waits: only being caught up closes it
                                     "subscriberIdleMs": 600_000}},
    ]
    job = Job(line, {"jar": jvm_front_end.jar(), "emulator": google.host_port, "subscription": "unused",
                     "out": str(tmp / "out"), "checkpoint": str(tmp / "ck"), "steps": steps,
                     "conf": {"spark.sql.streaming.numRecentProgressUpdates": "1000"}})
    return Run(line, job.result(timeout=1100), names)


def unacked(google, sub: str) -> int:
    return len(google.pull_all(sub, max_wait=3.0, ack=False))


def test_catch_up_streams_grow_a_task_behind_its_backlog_and_live_rows_close_them(run, google):
    """Behind its backlog the task's subscriber grows to catchUpStreamsPerPartition
    streams; once a task hands over live rows it is closed, and the next task's
    has streamsPerPartition (1) again. Every message comes out exactly once."""
    r = run.result["catch_up"][0]
    assert r["error"] is None, r["error"][:3000]
    streams = [(p["numInputRows"], int(p["sources"][0]["metrics"]["streams"])) for p in batches(r["progress"])]
    grown = [i for i, (_, s) in enumerate(streams) if s == CATCH_UP_STREAMS]
    assert grown, f"no micro-batch read with {CATCH_UP_STREAMS} streams: {streams}"
    assert any(s == 1 for _, s in streams[grown[-1] + 1:]), f"the grown subscriber was kept for live rows: {streams}"
    assert set(s for _, s in streams) <= {1, CATCH_UP_STREAMS}, streams
    ids = r["ids"]
    assert len(ids) == len(set(ids)) == CATCH_UP_BACKLOG + r["written"], (len(ids), len(set(ids)), r["written"])
    assert set(run.names["catch_ids"]) <= set(ids), "a backlog message missing"
    assert r["live_payloads"] == sorted(f"live{i}" for i in range(r["written"]))
    assert unacked(google, run.names["catch_sub"]) == 0
