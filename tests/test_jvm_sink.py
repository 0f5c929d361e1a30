"""The JVM front end's sink (jvm/.../sink, docs/jvm.md) on PySpark 3.5.7 and
4.3 with the jar, against Google's official emulator, checked with Google's
client: batch and streaming writes deliver every row as written (payload,
attributes, ordering key, event time, deterministic ids), and a bad row
fails its write naming the row's problem."""

from __future__ import annotations

import pytest

import jvm_front_end
from jvm_front_end import VERSIONS, Job

pytestmark = pytest.mark.timeout(1200)

EXPRS = ["CAST(concat('p', id) AS BINARY) AS payload",
         "map('k', CAST(id AS STRING), 'even', CAST(id % 2 = 0 AS STRING)) AS attributes",
         "concat('key', CAST(id % 3 AS STRING)) AS ordering_key",
         "CAST(id * 1000 AS TIMESTAMP) AS event_time"]


@pytest.fixture(scope="module")
def jar() -> str:
    return jvm_front_end.jar()


def options(topic: str, host: str) -> dict:
    return {"topicId": topic, "emulatorHost": host, "enableMessageOrdering": "true",
            "timestampAttribute": "ts", "idAttribute": "uid"}


def check(received, n: int) -> None:
    assert len(received) == n, f"{len(received)} messages, wanted {n}"
    by_payload = {m.message.data.decode(): m.message for m in received}
    assert sorted(by_payload) == sorted(f"p{i}" for i in range(n)), "a row missing or published twice"
    for i in range(n):
        m = by_payload[f"p{i}"]
        a = dict(m.attributes)
        assert a["k"] == str(i) and a["even"] == str(i % 2 == 0).lower(), a
        assert a["ts"] == str(i * 1000 * 1000), a  # event time as epoch milliseconds
        assert m.ordering_key == f"key{i % 3}", m.ordering_key
    # idAttribute: <queryId>-<epoch>-<partition>-<row>, distinct per message
    uids = {dict(m.message.attributes)["uid"] for m in received}
    assert len(uids) == n and all(u.count("-") >= 3 for u in uids), sorted(uids)[:5]


@pytest.mark.parametrize("line", VERSIONS)
def test_batch_and_streaming_writes_deliver_every_row_as_written(line, jar, google, tmp_path):
    topic, sub = google.topic(ordering=True)
    topic2, sub2 = google.topic(ordering=True)
    job = Job(line, {"jar": jar, "emulator": google.host_port, "subscription": sub, "out": str(tmp_path / "o"),
                     "checkpoint": str(tmp_path / "ck"), "steps": [
                         {"kind": "write", "n": 3000, "exprs": EXPRS, "options": options(topic, google.host_port)},
                         {"kind": "write", "n": 2000, "exprs": EXPRS, "streaming": True,
                          "options": options(topic2, google.host_port)}]})
    r = job.result()
    assert r["writes"] == ["ok", "ok"], r["writes"]
    check(google.pull_all(sub, max_wait=8.0), 3000)
    check(google.pull_all(sub2, max_wait=8.0), 2000)


def test_a_spark_connect_client_reads_and_writes_through_a_server_with_the_jar(jar, google, tmp_path):
    from emulators import free_port

    topic, sub = google.topic()
    google.publish(topic, [f"m{i}".encode() for i in range(2000)])
    out_topic, out_sub = google.topic()
    port = free_port()
    conf = {"spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
            "spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(port)}
    r = Job("4.3", {"jar": jar, "emulator": google.host_port, "subscription": sub, "out": str(tmp_path / "o"),
                    "checkpoint": str(tmp_path / "ck"), "conf": conf,
                    "steps": [{"kind": "connect", "port": port, "topic": out_topic, "n": 500}]}).result()["connect"]
    assert r["description"].startswith("pubsub-go["), r  # the JVM source (the Python one names itself otherwise)
    assert r["read"] == 2000, r
    got = sorted(m.message.data.decode() for m in google.pull_all(out_sub, max_wait=6.0))
    assert got == sorted(f"c{i}" for i in range(500))


def test_bad_input_fails_naming_the_problem(jar, google, tmp_path):
    topic, sub = google.topic()
    host = google.host_port
    steps = [
        # a row's attribute key the service refuses (it starts with goog)
        {"kind": "write", "n": 10, "exprs": ["CAST(id AS STRING) AS payload", "map('goog-x', 'v') AS attributes"],
         "options": {"topicId": topic, "emulatorHost": host}},
        # a column the sink does not take
        {"kind": "write", "n": 1, "exprs": ["CAST(id AS STRING) AS payload", "id AS extra"],
         "options": {"topicId": topic, "emulatorHost": host}},
        # an ordering key without enableMessageOrdering
        {"kind": "write", "n": 1, "exprs": ["CAST(id AS STRING) AS payload", "'k' AS ordering_key"],
         "options": {"topicId": topic, "emulatorHost": host}},
        # no payload
        {"kind": "write", "n": 1, "exprs": ["map('a', 'b') AS attributes"],
         "options": {"topicId": topic, "emulatorHost": host}},
    ]
    r = Job("4.3", {"jar": jar, "emulator": host, "subscription": sub, "out": str(tmp_path / "o"),
                    "checkpoint": str(tmp_path / "ck"), "steps": steps}).result()
    goog, extra, key, nopayload = r["writes"]
    assert "goog" in goog and "row" in goog, goog[:2000]
    assert "extra" in extra and "payload (binary or string, required)" in extra, extra[:2000]
    assert "enableMessageOrdering" in key, key[:2000]
    assert "no payload column" in nopayload, nopayload[:2000]
    assert google.pull_all(sub, max_wait=3.0) == [], "a write that failed published something"
