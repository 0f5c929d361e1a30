"""Schema mode of the JVM front end (jvm/, docs/jvm.md) on PySpark 3.5.7
and 4.3 with the jar, against Google's official emulator, Google's client
as the outside peer: payloads decoded in the Go data plane and compared
with Spark's own from_json / from_avro of the same bytes (the vectors of
tests/test_schema_mode.py), protobuf with the columns derived from .proto
source, onDecodeError (fail, column, dead-letter topic), a hostile decoder
module whose faults fail the task with a NativeException naming the kind
while the session reads on, and the Arrow schema the JVM sends Go against
the Python front end's.

The jar is the installed package's unless $PUBSUB_GO_TEST_JAR names another
(a build of this tree: jvm/build.sh --lib ... --out ...)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from guests import build_guest
from jvm_front_end import VERSIONS, Job, python_for
from test_schema_mode import JSON_DDL, json_payloads

pytestmark = pytest.mark.timeout(1500)
SCHEMA_JOB = Path(__file__).resolve().parent / "jvm" / "schema_job.py"
META = ("message_id", "publish_time", "attributes")


@pytest.fixture(scope="module")
def jar() -> str:
    import pubsub_go

    return os.environ.get("PUBSUB_GO_TEST_JAR") or pubsub_go.jar_path()


class SchemaJob(Job):
    """tests/jvm/schema_job.py (job.py's session, schema-mode steps)."""

    def __init__(self, line: str, spec: dict) -> None:  # noqa: D107 - Job's, with another script
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env["PYSPARK_PYTHON"] = python_for(line)
        self.proc = subprocess.Popen([python_for(line), str(SCHEMA_JOB), json.dumps(spec)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir())
        self.err: list[str] = []


def spec(jar: str, google, tmp: Path, steps: list[dict], **extra) -> dict:
    return {"jar": jar, "emulator": google.host_port, "subscription": "unused", "out": str(tmp / "out"),
            "checkpoint": str(tmp / "ck"), "steps": steps,
            "conf": {"spark.sql.session.timeZone": "UTC", **extra.pop("conf", {})},
            "options": {"numPartitions": 2, "maxWaitTimeMs": 300}, **extra}


def b64(payloads: list[bytes]) -> list[str]:
    return [base64.b64encode(p).decode() for p in payloads]


def rows_by_id(out: dict) -> dict[str, dict]:
    rows = [json.loads(j) for j in out["rows"]]
    return {r["message_id"]: r for r in rows}


def same_as_spark(got: dict[str, dict], ref: dict[str, str], decoded: list[str]) -> None:
    assert sorted(got) == sorted(ref), "every published message comes out exactly once"
    mismatches = []
    for mid, row in got.items():
        mine = {k: v for k, v in row.items() if k in decoded}
        want = json.loads(ref[mid]) if ref[mid] is not None else {}
        if mine != want:
            mismatches.append((mid, mine, want))
    assert not mismatches, f"{len(mismatches)} rows differ from Spark's decoding, e.g. {mismatches[:2]}"


@pytest.mark.parametrize("line", VERSIONS)
def test_json_columns_equal_spark_from_json(line, jar, google, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    payloads = json_payloads(120)
    ids = google.publish(topic, payloads, attributes=[{"i": str(i)} for i in range(len(payloads))])
    schema = f"{JSON_DDL}, message_id STRING, publish_time TIMESTAMP, attributes MAP<STRING, STRING>"
    r = SchemaJob(line, spec(jar, google, tmp_path, [{
        "kind": "decode", "name": "json_mode", "subscription": sub, "schema": schema, "options": {"format": "json"},
        "ref": {"expr": f"from_json(CAST(payload AS STRING), '{JSON_DDL}')", "ids": ids, "payloads": b64(payloads)},
    }])).result()
    assert r["spark"].startswith(line), r["spark"]
    out = r["decoded"]["json_mode"]
    got = rows_by_id(out)
    decoded = ["id", "qty", "price", "ratio", "ok", "note", "at", "day", "tags", "props", "customer", "items"]
    same_as_spark(got, out["ref"], decoded)
    assert got[ids[1]]["attributes"] == {"i": "1"} and got[ids[1]]["publish_time"]
    assert sum(p["numInputRows"] for p in out["progress"]) == 120
    assert google.pull_all(sub, max_wait=2) == [], "acked at commit"


@pytest.fixture(scope="module")
def avro_vectors(jar, google, tmp_path_factory) -> dict:
    """Avro payloads written by Spark 4.3's to_avro and what its from_avro
    reads back (PySpark 3.5 has neither without the spark-avro package)."""
    from sparkutil import SPARK_AVRO

    r = SchemaJob("4.3", spec(jar, google, tmp_path_factory.mktemp("avro"), [{"kind": "avro_vectors", "n": 90}],
                              conf={"spark.jars.packages": SPARK_AVRO})).result()
    return r["avro"]


@pytest.mark.parametrize("line", VERSIONS)
def test_avro_schema_derived_and_columns_equal_spark_from_avro(line, jar, google, tmp_path, avro_vectors):
    topic, sub = google.topic(ack_deadline=30)
    payloads = [base64.b64decode(p) for p in avro_vectors["payloads"]]
    ids = google.publish(topic, payloads)
    # No .schema(): derived from avroSchema as from_avro does, plus metadata columns.
    r = SchemaJob(line, spec(jar, google, tmp_path, [{
        "kind": "decode", "name": "avro_mode", "subscription": sub,
        "options": {"format": "avro", "avroSchema": avro_vectors["avro_schema"]},
    }])).result()
    out = r["decoded"]["avro_mode"]
    assert out["schema"] == [*avro_vectors["schema"], "message_id:string", "publish_time:timestamp",
                             "attributes:map<string,string>"]
    ref = dict(zip(ids, avro_vectors["ref"], strict=True))
    got = rows_by_id(out)
    same_as_spark(got, ref, [c.split(":")[0] for c in avro_vectors["schema"]])
    assert got[ids[7]]["status"] == "PAID" and got[ids[7]]["props"] == {"a": 7, "z": None}


@pytest.mark.parametrize("line", VERSIONS)
def test_protobuf_source_text_derives_the_columns(line, jar, google, tmp_path):
    """format=protobuf with .proto source text (compiled in Go), no
    .schema(): the columns derived from the message type on the driver, the
    rows as pubsub_go.decode gives them (which tests/test_protobuf.py holds
    to Google's parser), a truncated payload kept with its error (column mode)."""
    import pyarrow as pa

    import pubsub_go
    from protobuf_vectors import DESCRIPTOR_SET, SOURCE, events

    payloads = [m.SerializeToString() for m in events(12)]
    ref = pubsub_go.decode(pa.array(payloads), format="protobuf", protobuf_descriptor_set=DESCRIPTOR_SET,
                           protobuf_message="pgtest.Event")
    topic, sub = google.topic(ack_deadline=30)
    ids = google.publish(topic, [*payloads, b"\x12\xff"])
    r = SchemaJob(line, spec(jar, google, tmp_path, [{
        "kind": "decode", "name": "protobuf_mode", "subscription": sub,
        "options": {"format": "protobuf", "protobufSource": SOURCE, "protobufMessage": "pgtest.Event",
                    "onDecodeError": "column"},
    }])).result()
    out = r["decoded"]["protobuf_mode"]
    names = [c.split(":")[0] for c in out["schema"]]
    assert names == [*ref.schema.names[:-1], *META, "_decode_error"]
    assert "counts:map<string,bigint>" in out["schema"]
    got = rows_by_id(out)
    assert sorted(got) == sorted(ids)
    bad = got[ids[-1]]
    assert "malformed protobuf" in bad["_decode_error"] and "id" not in bad
    want = {row["id"]: row for row in ref.to_pylist()}
    for mid in ids[:-1]:
        row = got[mid]
        assert "_decode_error" not in row
        w = want[row["id"]]
        assert row.get("title") == w["title"] and row.get("u32") == w["u32"] and row.get("score") == w["score"]


@pytest.mark.parametrize("line", VERSIONS)
def test_column_and_fail_modes(line, jar, google, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    ids = google.publish(topic, [b'{"id": 1}', b'{"id": true}', b'{"id": 3}'])
    topic2, sub2 = google.topic(ack_deadline=30)
    bad_id = google.publish(topic2, [b'{"id": 1}', b'{"id": [}'])[1]
    r = SchemaJob(line, spec(jar, google, tmp_path, [
        {"kind": "decode", "name": "column_mode", "subscription": sub,
         "schema": "id BIGINT, err STRING, message_id STRING",
         "options": {"format": "json", "onDecodeError": "column", "errorColumn": "err"}},
        {"kind": "decode", "name": "fail_mode", "subscription": sub2, "schema": "id BIGINT",
         "options": {"format": "json"}, "expect_error": True},  # default: fail
    ])).result()
    rows = rows_by_id(r["decoded"]["column_mode"])
    assert rows[ids[0]] == {"id": 1, "message_id": ids[0]} and rows[ids[2]]["id"] == 3
    assert "id" not in rows[ids[1]] and rows[ids[1]]["err"], "the failed row is kept, with its error"
    err = r["decoded"]["fail_mode"]["error"]
    assert "onDecodeError=fail" in err and bad_id in err, err[-3000:]
    # Nacked, not lost.
    assert bad_id in {m.message.message_id for m in google.pull_all(sub2, max_wait=3)}


@pytest.mark.parametrize("line", VERSIONS)
def test_malformed_records_go_to_the_dead_letter_topic(line, jar, google, tmp_path):
    topic, sub = google.topic(ack_deadline=30)
    dlq_topic, dlq_sub = google.topic(ack_deadline=30)
    good = [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(30)]
    bad = [b'{"id": "not a number"}', b"\xff\xfe not json", b'{"id": 1,']
    payloads = good[:10] + bad[:1] + good[10:20] + bad[1:] + good[20:]
    ids = google.publish(topic, payloads, attributes=[{"src": "test", "n": str(i)} for i in range(len(payloads))])
    bad_ids = {ids[payloads.index(b)] for b in bad}
    r = SchemaJob(line, spec(jar, google, tmp_path, [{
        "kind": "decode", "name": "dlq_mode", "subscription": sub,
        "schema": "id BIGINT, name STRING, message_id STRING",
        "options": {"format": "json", "deadLetterTopicId": dlq_topic.rsplit("/", 1)[1], "projectId": google.project},
    }])).result()
    out = r["decoded"]["dlq_mode"]
    rows = [json.loads(j) for j in out["rows"]]
    assert sorted(x["message_id"] for x in rows) == sorted(set(ids) - bad_ids), "every good record, no bad one"
    assert {x["id"] for x in rows} == set(range(30))
    metrics = [p["sources"][0]["metrics"] for p in out["progress"] if p["numInputRows"] > 0]
    assert sum(int(m["deadLettered"]) for m in metrics) == 3, metrics
    assert sum(int(m["decode_errors"]) for m in metrics) == 3, metrics
    dead = google.pull_all(dlq_sub, max_wait=3)
    assert sorted(d.message.data for d in dead) == sorted(bad)
    for d in dead:
        a = dict(d.message.attributes)
        assert a["src"] == "test" and a["pubsub_go_message_id"] in bad_ids, a
        assert a["pubsub_go_decode_error"], "the decode error travels with the payload"
        assert a["pubsub_go_subscription"] == sub
    # Acked at the source: nothing comes back.
    assert google.pull_all(sub, max_wait=2) == []


@pytest.fixture(scope="module")
def hostile_wasm(tmp_path_factory) -> Path:
    return build_guest("internal/testguests/hostile", tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("line", VERSIONS)
def test_decoder_faults_fail_the_task_naming_the_kind_and_the_session_reads_on(line, jar, google, tmp_path,
                                                                                hostile_wasm):
    cases = [("loop", {"decoderTimeoutMs": 1000}, ["decoder_time_limit", "decoderTimeoutMs=1000",
                                                   "exceeded its time limit"]),
             ("alloc", {"decoderMemoryLimitMB": 48}, ["decoder_memory_limit", "decoderMemoryLimitMB=48"]),
             ("exit", {}, ["decoder_crashed"])]
    steps = []
    for payload, opts, _ in cases:
        topic, sub = google.topic(ack_deadline=30)
        google.publish(topic, [payload.encode()])
        steps.append({"kind": "decode", "name": f"hostile_{payload}", "subscription": sub, "schema": "v STRING",
                      "options": {"decoder": str(hostile_wasm), **opts}, "expect_error": True})
    topic, sub = google.topic(ack_deadline=30)
    ok_ids = google.publish(topic, [b"ok", b"fine"])
    steps.append({"kind": "decode", "name": "hostile_after", "subscription": sub,
                  "schema": "v STRING, message_id STRING", "options": {"decoder": str(hostile_wasm)}})
    r = SchemaJob(line, spec(jar, google, tmp_path, steps)).result()
    for payload, _, words in cases:
        err = r["decoded"][f"hostile_{payload}"]["error"]
        assert "NativeException" in err, err[-3000:]
        for w in [*words, "hostile.wasm"]:
            assert w in err, (w, err[-3000:])
    # The same session (its executor JVM and Go runtime) still decodes.
    rows = [json.loads(j) for j in r["decoded"]["hostile_after"]["rows"]]
    assert sorted((x["v"], x["message_id"]) for x in rows) == sorted(zip(["ok", "fine"], ok_ids, strict=True))


def test_options_are_validated_up_front(jar, google, tmp_path):
    cases = [
        (None, {"format": "xml"}, "format='xml' is not supported"),
        ("id BIGINT", {"format": "xml"}, "format='xml' is not supported"),
        (None, {"format": "avro"}, "avroSchema is required"),
        (None, {"format": "avro", "avroSchema": "{nope"}, "avroSchema is not valid JSON"),
        ("id BIGINT", {"decoder": "/nonexistent/d.wasm"}, "decoder='/nonexistent/d.wasm': no such file"),
        ("id BIGINT", {"format": "json", "errorColumn": "e"}, "errorColumn only applies to onDecodeError=column"),
        ("id BIGINT", {"format": "json", "onDecodeError": "deadletter"}, "needs option deadLetterTopicId"),
        ("id BIGINT", {"format": "json", "onDecodeError": "skip"}, "onDecodeError='skip'"),
        (None, {"avroSchema": "{}"}, "avroSchema only applies to schema mode"),
        (None, {"format": "json"}, "format=json needs a schema"),
        ("id BIGINT, publish_time STRING", {"format": "json"}, "publish_time is filled from the message"),
        ("id BIGINT", {"format": "json", "onDecodeError": "column"}, "add `_decode_error STRING`"),
        ("id BIGINT", {}, "needs schema mode"),
        ("id INTERVAL DAY", {"format": "json"}, "json decoder rejects"),
        ("id BIGINT NOT NULL", {"format": "json"}, "decoded column id is NOT NULL"),
    ]
    topic, sub = google.topic()
    steps = [{"kind": "decode", "name": f"opt{i}", "subscription": sub, "schema": schema, "options": opts,
              "expect_error": True} for i, (schema, opts, _) in enumerate(cases)]
    r = SchemaJob("4.3", spec(jar, google, tmp_path, steps)).result()
    for i, (_, opts, msg) in enumerate(cases):
        err = r["decoded"][f"opt{i}"].get("error", "no error")
        assert msg in err, (opts, err[-1500:])


def test_the_arrow_schema_sent_to_go_is_the_python_front_ends(jar, google, tmp_path):
    ddls = [JSON_DDL, "a TIMESTAMP_NTZ, b BINARY, c TINYINT, d SMALLINT, e FLOAT, f DECIMAL(38,10), g DATE",
            "m MAP<STRING, ARRAY<STRUCT<x: INT, y: MAP<INT, STRING>>>>, n ARRAY<ARRAY<BIGINT>>, "
            "s STRUCT<deep: STRUCT<deeper: ARRAY<TIMESTAMP>>>, i INTERVAL DAY TO SECOND, v VOID"]
    r = SchemaJob("4.3", spec(jar, google, tmp_path, [{"kind": "arrow_schema", "ddls": ddls}])).result()
    for x in r["arrow_schema"]:
        assert x["equal"], x

