"""The JVM front end's source (jvm/, docs/jvm.md) on PySpark 3.5.7 and 4.3
with the jar, against Google's official emulator, Google's client as the
outside peer: exactly once into parquet across AvailableNow runs and a
stopped and restarted streaming query, admission control, the figures in
the query's progress, a Go panic as a Java exception, reading under GC."""

from __future__ import annotations

from pathlib import Path

import pytest

import jvm_front_end
import native_debug
from jvm_front_end import VERSIONS, Job, batches

pytestmark = pytest.mark.timeout(1500)


@pytest.fixture(scope="module")
def jar() -> str:
    return jvm_front_end.jar()


def payloads(start: int, n: int) -> list[bytes]:
    return [f"m{i}".encode() for i in range(start, start + n)]


def spec(jar: str, google, sub: str, tmp: Path, steps: list[dict], **extra) -> dict:
    return {"jar": jar, "emulator": google.host_port, "subscription": sub, "out": str(tmp / "out"),
            "checkpoint": str(tmp / "ck"), "steps": steps, **extra}


def unacked(google, sub: str) -> int:
    return len(google.pull_all(sub, max_wait=3.0, ack=False))


@pytest.mark.parametrize("line", VERSIONS)
def test_available_now_twice_on_one_checkpoint_reads_each_message_once(line, jar, google, tmp_path):
    topic, sub = google.topic()
    ids = google.publish(topic, payloads(0, 20_000))
    more = tmp_path / "published-more"
    job = Job(line, spec(jar, google, sub, tmp_path, [
        {"kind": "available_now"},
        {"kind": "wait_file", "path": str(more)},
        {"kind": "available_now", "options": {"maxRecordsPerTrigger": 3000}},
        {"kind": "ids"},
    ]))
    job.wait_step("available_now")
    ids += google.publish(topic, payloads(20_000, 10_000))
    more.touch()
    r = job.result()
    assert r["spark"].startswith(line), r["spark"]
    first, second = r["runs"]
    assert sum(p["numInputRows"] for p in first) == 20_000
    assert sum(p["numInputRows"] for p in second) == 10_000
    assert len(r["ids"]) == 30_000 and sorted(r["ids"]) == sorted(ids), "a message missing or written twice"
    # Admission control: maxRecordsPerTrigger bounds every micro-batch of the second run.
    sizes = [p["numInputRows"] for p in batches(second)]
    assert max(sizes) <= 3000 and len(sizes) >= 4, sizes
    # The connector's figures are in the progress, batch by batch.
    for p in batches(first) + batches(second):
        m = p["sources"][0]["metrics"]
        assert int(m["rows"]) == p["numInputRows"], (m, p["numInputRows"])
        assert int(m["pulled"]) >= int(m["rows"]) and int(m["tasks"]) == 2, m
    assert int(batches(first)[-1]["sources"][0]["metrics"]["tasks"]) == 2
    # Everything read was acked at commit: nothing is left for another subscriber.
    assert unacked(google, sub) == 0


@pytest.mark.parametrize("line", VERSIONS)
def test_streaming_query_stopped_and_restarted_reads_each_message_once(line, jar, google, tmp_path):
    topic, sub = google.topic()
    ids = google.publish(topic, payloads(0, 6000))
    job = Job(line, spec(jar, google, sub, tmp_path, [
        {"kind": "streaming", "stop_at": 2000, "options": {"maxRecordsPerTrigger": 1000}},
        {"kind": "streaming", "stop_at": 1000, "options": {"maxRecordsPerTrigger": 1000}},
        {"kind": "available_now"},
        {"kind": "ids"},
    ]))
    r = job.result()
    runs = r["runs"]
    assert sum(p["numInputRows"] for p in runs[0]) >= 2000
    assert sum(p["numInputRows"] for run in runs for p in run) == 6000
    assert len(r["ids"]) == 6000 and sorted(r["ids"]) == sorted(ids), "a message missing or written twice"
    assert unacked(google, sub) == 0


def test_bad_options_fail_at_start_naming_the_option_and_what_is_right(jar, google, tmp_path):
    topic, sub = google.topic()
    job = Job("4.3", spec(jar, google, sub, tmp_path, [{"kind": "errors", "option_sets": [
        {"batchSize": "0"},                 # below the contract's range
        {"maxWaitTimeMs": "soon"},          # not a duration
        {"bogusOption": "1"},               # unknown
        {"idAttribute": "id"},              # in the table, not in the JVM front end yet
        {"failOnDataLoss": "false"},        # refused, with the reason
        {"maxOffsetsPerTrigger": "10"},     # another connector's alias
    ]}]))
    errors = job.result()["errors"]
    want = [("batchSize is 0", "1..1000000"), ("maxWaitTimeMs is soon", "500ms"),
            ("unknown source option bogusOption", "subscriptionId"),
            ("idAttribute is not supported by the JVM", "jvm.md"),
            ("failOnDataLoss", "messageRetentionSeconds"), ("maxOffsetsPerTrigger", "maxRecordsPerTrigger")]
    assert len(errors) == len(want)
    for err, words in zip(errors, want, strict=True):
        for w in words:  # Spark lower-cases option keys before a source sees them
            assert w.lower() in err.lower(), (w, err[:1500])


def test_a_go_panic_is_a_java_exception_and_the_jvm_reads_on_under_gc(jar, google, tmp_path):
    lib = native_debug.build(tmp_path)
    topic, sub = google.topic()
    ids = google.publish(topic, payloads(0, 5000))
    job = Job("4.3", spec(jar, google, sub, tmp_path, [{"kind": "panic"}, {"kind": "gc"}, {"kind": "ids"}],
                          conf={"spark.driver.extraJavaOptions": f"-Dpubsubgo.library={lib}"}))
    r = job.result()
    assert "NativeException" in r["panic"] and "panic in libpubsubgo" in r["panic"], r["panic"]
    assert "assignment to entry in nil map" in r["panic"], r["panic"]
    assert sorted(r["ids"]) == sorted(ids)
