"""The JVM source's read options it took over from the Python source last
(docs/jvm.md, "Options"): catchUpStreamsPerPartition, idAttribute and
idAttributeWindowSeconds, on PySpark 3.5.7 and 4.3 with the jar, against Google's official emulator, Google's client as
the outside peer. One Spark application per version runs every scenario
in turn (tests/jvm/job.py with tests/jvm/source_steps.py), then each test
checks its part, as tests/test_jvm_front_end.py does.

The jar is the installed package's unless $PUBSUB_GO_TEST_JAR names another
(a build of this tree: jvm/build.sh --lib ... --out ...)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import jvm_front_end
from jvm_front_end import VERSIONS, Job, batches

pytestmark = pytest.mark.timeout(1200)

CATCH_UP_BACKLOG, CATCH_UP_STREAMS, LIVE = 20_000, 4, 20
IDS, NEW, LATE = 1000, 100, 50
JSON_IDS = 20


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
    names["id_topic"], names["id_sub"] = google.topic(ack_deadline=30)
    google.publish(names["id_topic"], [b"first"] * IDS, attributes=[{"uid": str(i)} for i in range(IDS)])
    ids = {"kind": "id_attribute", "key": "id_attribute", "subscription": names["id_sub"], "out": str(tmp / "id-out"),
           "checkpoint": str(tmp / "id-ck"), "options": {"idAttribute": "uid", "numPartitions": 2}}
    names["json_topic"], names["json_sub"] = google.topic(ack_deadline=30)
    google.publish(names["json_topic"], [json.dumps({"n": i}).encode() for i in range(JSON_IDS)]
                   + [json.dumps({"n": 100 + i}).encode() for i in range(JSON_IDS)],  # retries, after the originals
                   attributes=[{"uid": str(i % JSON_IDS)} for i in range(2 * JSON_IDS)])
    window = tmp / "id-ck" / "sources" / "0" / "pubsub-go-batchlog" / "_id_window"  # the log under the checkpoint
    steps = [
        ids,
        {"kind": "wait_file", "path": str(tmp / "id-again")},
        ids,
        {"kind": "wait_file", "path": str(tmp / "id-late")},
        {**ids, "options": {**ids["options"], "idAttributeWindowSeconds": "60"}},
        # schema mode: one task (copies taken by two tasks of one micro-batch both pass), JSON decoded
        {"kind": "id_attribute", "key": "id_schema_mode", "subscription": names["json_sub"],
         "out": str(tmp / "idj-out"), "checkpoint": str(tmp / "idj-ck"),
         "schema": "n INT, attributes MAP<STRING, STRING>",
         "options": {"idAttribute": "uid", "numPartitions": 1, "format": "json"}},
        {"kind": "catch_up", "key": "catch_up", "subscription": names["catch_sub"], "topic": names["catch_topic"],
         "out": str(tmp / "cu-out"), "checkpoint": str(tmp / "cu-ck"), "backlog": CATCH_UP_BACKLOG, "live": LIVE,
         "streams": 1, "options": {"numPartitions": 1, "catchUpStreamsPerPartition": CATCH_UP_STREAMS,
                                     # kept between tasks however long Spark waits: only being caught up closes it
                                     "subscriberIdleMs": 600_000}},
    ]
    job = Job(line, {"jar": jvm_front_end.jar(), "emulator": google.host_port, "subscription": "unused",
                     "out": str(tmp / "out"), "checkpoint": str(tmp / "ck"), "steps": steps,
                     "conf": {"spark.sql.streaming.numRecentProgressUpdates": "1000"}})
    job.wait_step("id_attribute")
    # The publisher retries all of them (new message ids, same uids) and adds NEW more.
    google.publish(names["id_topic"], [b"again"] * IDS + [b"new"] * NEW,
                   attributes=[{"uid": str(i)} for i in range(IDS + NEW)])
    (tmp / "id-again").touch()
    job.wait_step("id_attribute")
    names["window_after_two"] = sorted(p.name for p in window.glob("*.arrow"))
    names["window_ids"] = sorted(id_ for p in window.glob("*.arrow") for id_ in window_ids(p))
    # The window's files made two minutes old: past idAttributeWindowSeconds=60, so LATE copies pass.
    for p in window.glob("*.arrow"):
        os.utime(p, (time.time() - 120, time.time() - 120))
    google.publish(names["id_topic"], [b"late"] * LATE, attributes=[{"uid": str(i)} for i in range(LATE)])
    (tmp / "id-late").touch()
    result = job.result(timeout=1100)
    names["window_after_three"] = sorted(p.name for p in window.glob("*.arrow"))
    return Run(line, result, names)


def window_ids(path: Path) -> list[str]:
    """An id file as the Python source reads one (id_window.py): an Arrow IPC file, one string column "id"."""
    import pyarrow as pa

    with pa.OSFile(str(path)) as f:
        t = pa.ipc.open_file(f).read_all()
    assert t.column_names == ["id"] and t.schema.field("id").type == pa.string(), t.schema
    return t.column("id").to_pylist()


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


def test_id_attribute_drops_republished_ids_across_restarts_and_forgets_them_after_the_window(run, google):
    """Three AvailableNow runs on one checkpoint (each a restart): IDS messages;
    then copies of all of them and NEW more (the copies dropped, acked and
    counted in "duplicates"); then, with the window's files made older than
    idAttributeWindowSeconds=60, LATE copies, which pass, the expired files
    deleted. Every id comes out once per window, nothing is left unacked."""
    first, second, third = run.result["id_attribute"]
    for r in (first, second, third):
        assert r["error"] is None, r["error"][:3000]
    assert sum(p["numInputRows"] for p in first["progress"]) == IDS
    assert sum(p["numInputRows"] for p in second["progress"]) == NEW  # the batches (and their log) hold no copy
    # each batch's figures once (a progress report without a batch of its own repeats the last one's)
    dups = {m["batch"]: int(m.get("duplicates", 0)) for m in (p["sources"][0]["metrics"] for p in second["progress"])
            if "batch" in m}
    assert sum(dups.values()) == IDS, dups
    assert second["rows"] == sorted([[str(i), "first"] for i in range(IDS)]
                                    + [[str(i), "new"] for i in range(IDS, IDS + NEW)])
    assert run.names["window_ids"] == sorted(str(i) for i in range(IDS + NEW))  # the files Python's source reads
    assert sum(p["numInputRows"] for p in third["progress"]) == LATE
    assert sorted(r for r in third["rows"] if r[1] == "late") == sorted([str(i), "late"] for i in range(LATE))
    # the expired files went, the third run's own came
    assert not set(run.names["window_after_two"]) & set(run.names["window_after_three"])
    assert run.names["window_after_three"], "the third run recorded no ids"
    assert unacked(google, run.names["id_sub"]) == 0, "a dropped copy was not acked"


def test_id_attribute_drops_copies_in_schema_mode_too(run, google):
    r = run.result["id_schema_mode"][0]
    assert r["error"] is None, r["error"][:3000]
    assert sorted(int(uid) for uid, _ in r["rows"]) == list(range(JSON_IDS)), r["rows"]  # each id once
    assert all(n % 100 == int(uid) for uid, n in r["rows"]), r["rows"]  # decoded from its own message
    dups = {m["batch"]: int(m.get("duplicates", 0)) for m in (p["sources"][0]["metrics"] for p in r["progress"])
            if "batch" in m}
    assert sum(dups.values()) == JSON_IDS, dups
    assert unacked(google, run.names["json_sub"]) == 0, "a dropped copy was not acked"
