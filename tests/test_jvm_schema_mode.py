"""Schema mode of the JVM front end (jvm/, docs/jvm.md) on PySpark 3.5.7
and 4.3 with the jar, against Google's official emulator, Google's client
as the outside peer: payloads decoded in the Go data plane and compared
with Spark's own from_json / from_avro of the same bytes (the vectors of
tests/test_schema_mode.py), protobuf with the columns derived from .proto
source, onDecodeError (fail, column, dead-letter topic), a hostile decoder
module whose faults fail the task with a NativeException naming the kind
while the session reads on, and the Arrow schema the JVM sends Go against
the Python front end's.

One Spark application per PySpark version runs every scenario in turn (an
application per scenario cost CI minutes), then each test checks its part,
as tests/test_jvm_front_end.py does; each step records its own failure, so
one scenario's failing query cannot take the others down, and the steps
that fail queries on purpose (onDecodeError=fail, the hostile decoder) run
last. The options-validation and Arrow-schema scenarios run in the 4.3
application only; the Avro vectors come from one more 4.3 application,
with spark-avro.

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

pytestmark = pytest.mark.timeout(2700)  # the first test's setup runs two applications
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


JSON_DECODED = ["id", "qty", "price", "ratio", "ok", "note", "at", "day", "tags", "props", "customer", "items"]
HOSTILE_CASES = [  # (payload, options, words the task's error must hold)
    ("loop", {"decoderTimeoutMs": 1000}, ["decoder_time_limit", "decoderTimeoutMs=1000", "exceeded its time limit"]),
    ("alloc", {"decoderMemoryLimitMB": 48}, ["decoder_memory_limit", "decoderMemoryLimitMB=48"]),
    ("exit", {}, ["decoder_crashed"]),
]
OPTION_CASES = [  # (schema, options, the words of the error)
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
ARROW_DDLS = [JSON_DDL, "a TIMESTAMP_NTZ, b BINARY, c TINYINT, d SMALLINT, e FLOAT, f DECIMAL(38,10), g DATE",
              "m MAP<STRING, ARRAY<STRUCT<x: INT, y: MAP<INT, STRING>>>>, n ARRAY<ARRAY<BIGINT>>, "
              "s STRUCT<deep: STRUCT<deeper: ARRAY<TIMESTAMP>>>, i INTERVAL DAY TO SECOND, v VOID"]
DLQ_GOOD = [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(30)]
DLQ_BAD = [b'{"id": "not a number"}', b"\xff\xfe not json", b'{"id": 1,']


@pytest.fixture(scope="module")
def avro_vectors(jar, google, tmp_path_factory) -> dict:
    """Avro payloads written by Spark 4.3's to_avro and what its from_avro
    reads back (PySpark 3.5 has neither without the spark-avro package)."""
    from sparkutil import SPARK_AVRO

    r = SchemaJob("4.3", spec(jar, google, tmp_path_factory.mktemp("avro"), [{"kind": "avro_vectors", "n": 90}],
                              conf={"spark.jars.packages": SPARK_AVRO})).result()
    assert "avro" in r, r.get("step_errors")
    return r["avro"]


@pytest.fixture(scope="module")
def hostile_wasm(tmp_path_factory) -> Path:
    return build_guest("internal/testguests/hostile", tmp_path_factory.mktemp("hostile"))


class Run:
    """What one application's scenarios left: the job's result and the names
    (topics, subscriptions, message ids, references) each test needs."""

    def __init__(self, line: str, result: dict, names: dict) -> None:
        self.line, self.result, self.names = line, result, names


@pytest.fixture(scope="module", params=VERSIONS)
def run(request, jar, google, tmp_path_factory, avro_vectors, hostile_wasm) -> Run:
    """Every scenario's setup, then one application on that PySpark line
    running all their steps, the ones that fail queries on purpose last."""
    import pyarrow as pa

    import pubsub_go
    from protobuf_vectors import DESCRIPTOR_SET, SOURCE, events

    line = request.param
    tmp: Path = tmp_path_factory.mktemp(f"schema-{line}")
    n: dict = {}
    steps: list[dict] = []

    # JSON, against Spark's from_json of the same bytes.
    topic, n["json_sub"] = google.topic(ack_deadline=30)
    payloads = json_payloads(120)
    ids = n["json_ids"] = google.publish(topic, payloads, attributes=[{"i": str(i)} for i in range(len(payloads))])
    schema = f"{JSON_DDL}, message_id STRING, publish_time TIMESTAMP, attributes MAP<STRING, STRING>"
    steps.append({"kind": "decode", "name": "json_mode", "subscription": n["json_sub"], "schema": schema,
                  "options": {"format": "json"},
                  "ref": {"expr": f"from_json(CAST(payload AS STRING), '{JSON_DDL}')", "ids": ids,
                          "payloads": b64(payloads)}})

    # Avro, no .schema(): derived from avroSchema as from_avro does, plus metadata columns.
    topic, sub = google.topic(ack_deadline=30)
    n["avro_ids"] = google.publish(topic, [base64.b64decode(p) for p in avro_vectors["payloads"]])
    steps.append({"kind": "decode", "name": "avro_mode", "subscription": sub,
                  "options": {"format": "avro", "avroSchema": avro_vectors["avro_schema"]}})

    # Protobuf from .proto source text, a truncated payload last (column mode).
    payloads = [m.SerializeToString() for m in events(12)]
    n["protobuf_ref"] = pubsub_go.decode(pa.array(payloads), format="protobuf", protobuf_descriptor_set=DESCRIPTOR_SET,
                                         protobuf_message="pgtest.Event")
    topic, sub = google.topic(ack_deadline=30)
    n["protobuf_ids"] = google.publish(topic, [*payloads, b"\x12\xff"])
    steps.append({"kind": "decode", "name": "protobuf_mode", "subscription": sub,
                  "options": {"format": "protobuf", "protobufSource": SOURCE, "protobufMessage": "pgtest.Event",
                              "onDecodeError": "column"}})

    # onDecodeError=column.
    topic, sub = google.topic(ack_deadline=30)
    n["column_ids"] = google.publish(topic, [b'{"id": 1}', b'{"id": true}', b'{"id": 3}'])
    steps.append({"kind": "decode", "name": "column_mode", "subscription": sub,
                  "schema": "id BIGINT, err STRING, message_id STRING",
                  "options": {"format": "json", "onDecodeError": "column", "errorColumn": "err"}})

    # A dead-letter topic.
    topic, n["dlq_sub"] = google.topic(ack_deadline=30)
    dlq_topic, n["dlq_dead_sub"] = google.topic(ack_deadline=30)
    payloads = DLQ_GOOD[:10] + DLQ_BAD[:1] + DLQ_GOOD[10:20] + DLQ_BAD[1:] + DLQ_GOOD[20:]
    ids = n["dlq_ids"] = google.publish(topic, payloads,
                                        attributes=[{"src": "test", "n": str(i)} for i in range(len(payloads))])
    n["dlq_bad_ids"] = {ids[payloads.index(b)] for b in DLQ_BAD}
    steps.append({"kind": "decode", "name": "dlq_mode", "subscription": n["dlq_sub"],
                  "schema": "id BIGINT, name STRING, message_id STRING",
                  "options": {"format": "json", "deadLetterTopicId": dlq_topic.rsplit("/", 1)[1],
                              "projectId": google.project}})

    if line == "4.3":
        # Options refused up front (load() or start()), and the Arrow schema the JVM sends Go.
        _, sub = google.topic()
        steps += [{"kind": "decode", "name": f"opt{i}", "subscription": sub, "schema": schema, "options": opts,
                   "expect_error": True} for i, (schema, opts, _) in enumerate(OPTION_CASES)]
        steps.append({"kind": "arrow_schema", "ddls": ARROW_DDLS})

    # Destructive last: a query that fails (onDecodeError=fail, the default) ...
    topic, n["fail_sub"] = google.topic(ack_deadline=30)
    n["fail_bad_id"] = google.publish(topic, [b'{"id": 1}', b'{"id": [}'])[1]
    steps.append({"kind": "decode", "name": "fail_mode", "subscription": n["fail_sub"], "schema": "id BIGINT",
                  "options": {"format": "json"}, "expect_error": True})
    # ... then a hostile decoder's faults failing tasks, then the same session decoding on.
    for payload, opts, _ in HOSTILE_CASES:
        topic, sub = google.topic(ack_deadline=30)
        google.publish(topic, [payload.encode()])
        steps.append({"kind": "decode", "name": f"hostile_{payload}", "subscription": sub, "schema": "v STRING",
                      "options": {"decoder": str(hostile_wasm), **opts}, "expect_error": True})
    topic, sub = google.topic(ack_deadline=30)
    n["hostile_ok_ids"] = google.publish(topic, [b"ok", b"fine"])
    steps.append({"kind": "decode", "name": "hostile_after", "subscription": sub,
                  "schema": "v STRING, message_id STRING", "options": {"decoder": str(hostile_wasm)}})

    return Run(line, SchemaJob(line, spec(jar, google, tmp, steps)).result(timeout=2400), n)


def decoded(run: Run, name: str) -> dict:
    """A step's output, which must not have failed."""
    out = run.result.get("decoded", {}).get(name)
    assert out is not None, (name, run.result.get("step_errors"))
    assert "error" not in out, f"{name} failed: {out['error'][-3000:]}"
    assert "ref_error" not in out, f"{name}: Spark's reference decoding failed: {out['ref_error'][-3000:]}"
    return out


def failed(run: Run, name: str) -> str:
    """The error a step that should fail recorded."""
    out = run.result.get("decoded", {}).get(name)
    assert out is not None, (name, run.result.get("step_errors"))
    assert "error" in out, f"{name} did not fail: {out}"
    return out["error"]


def test_json_columns_equal_spark_from_json(run, google):
    ids = run.names["json_ids"]
    assert run.result["spark"].startswith(run.line), run.result["spark"]
    out = decoded(run, "json_mode")
    got = rows_by_id(out)
    same_as_spark(got, out["ref"], JSON_DECODED)
    assert got[ids[1]]["attributes"] == {"i": "1"} and got[ids[1]]["publish_time"]
    assert sum(p["numInputRows"] for p in out["progress"]) == 120
    assert google.pull_all(run.names["json_sub"], max_wait=2) == [], "acked at commit"


def test_avro_schema_derived_and_columns_equal_spark_from_avro(run, avro_vectors):
    ids = run.names["avro_ids"]
    out = decoded(run, "avro_mode")
    assert out["schema"] == [*avro_vectors["schema"], "message_id:string", "publish_time:timestamp",
                             "attributes:map<string,string>"]
    ref = dict(zip(ids, avro_vectors["ref"], strict=True))
    got = rows_by_id(out)
    same_as_spark(got, ref, [c.split(":")[0] for c in avro_vectors["schema"]])
    assert got[ids[7]]["status"] == "PAID" and got[ids[7]]["props"] == {"a": 7, "z": None}


def test_protobuf_source_text_derives_the_columns(run):
    """format=protobuf with .proto source text (compiled in Go), no
    .schema(): the columns derived from the message type on the driver, the
    rows as pubsub_go.decode gives them (which tests/test_protobuf.py holds
    to Google's parser), a truncated payload kept with its error (column mode)."""
    ref, ids = run.names["protobuf_ref"], run.names["protobuf_ids"]
    out = decoded(run, "protobuf_mode")
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


def test_column_and_fail_modes(run, google):
    ids, bad_id = run.names["column_ids"], run.names["fail_bad_id"]
    rows = rows_by_id(decoded(run, "column_mode"))
    assert rows[ids[0]] == {"id": 1, "message_id": ids[0]} and rows[ids[2]]["id"] == 3
    assert "id" not in rows[ids[1]] and rows[ids[1]]["err"], "the failed row is kept, with its error"
    err = failed(run, "fail_mode")
    assert "onDecodeError=fail" in err and bad_id in err, err[-3000:]
    # Nacked, not lost.
    assert bad_id in {m.message.message_id for m in google.pull_all(run.names["fail_sub"], max_wait=3)}


def test_malformed_records_go_to_the_dead_letter_topic(run, google):
    ids, bad_ids, sub = run.names["dlq_ids"], run.names["dlq_bad_ids"], run.names["dlq_sub"]
    out = decoded(run, "dlq_mode")
    rows = [json.loads(j) for j in out["rows"]]
    assert sorted(x["message_id"] for x in rows) == sorted(set(ids) - bad_ids), "every good record, no bad one"
    assert {x["id"] for x in rows} == set(range(30))
    metrics = [p["sources"][0]["metrics"] for p in out["progress"] if p["numInputRows"] > 0]
    assert sum(int(m["deadLettered"]) for m in metrics) == 3, metrics
    assert sum(int(m["decode_errors"]) for m in metrics) == 3, metrics
    dead = google.pull_all(run.names["dlq_dead_sub"], max_wait=3)
    assert sorted(d.message.data for d in dead) == sorted(DLQ_BAD)
    for d in dead:
        a = dict(d.message.attributes)
        assert a["src"] == "test" and a["pubsub_go_message_id"] in bad_ids, a
        assert a["pubsub_go_decode_error"], "the decode error travels with the payload"
        assert a["pubsub_go_subscription"] == sub
    # Acked at the source: nothing comes back.
    assert google.pull_all(sub, max_wait=2) == []


def test_decoder_faults_fail_the_task_naming_the_kind_and_the_session_reads_on(run):
    for payload, _, words in HOSTILE_CASES:
        err = failed(run, f"hostile_{payload}")
        assert "NativeException" in err, err[-3000:]
        for w in [*words, "hostile.wasm"]:
            assert w in err, (w, err[-3000:])
    # The same session (its executor JVM and Go runtime) still decodes.
    rows = [json.loads(j) for j in decoded(run, "hostile_after")["rows"]]
    ok_ids = run.names["hostile_ok_ids"]
    assert sorted((x["v"], x["message_id"]) for x in rows) == sorted(zip(["ok", "fine"], ok_ids, strict=True))


@pytest.mark.parametrize("run", ["4.3"], indirect=True)
def test_options_are_validated_up_front(run):
    r = run.result
    for i, (_, opts, msg) in enumerate(OPTION_CASES):
        err = r["decoded"][f"opt{i}"].get("error", "no error")
        assert msg in err, (opts, err[-1500:])


@pytest.mark.parametrize("run", ["4.3"], indirect=True)
def test_the_arrow_schema_sent_to_go_is_the_python_front_ends(run):
    r = run.result
    assert "arrow_schema" not in r.get("step_errors", {}), r["step_errors"]["arrow_schema"][-3000:]
    assert len(r["arrow_schema"]) == len(ARROW_DDLS)
    for x in r["arrow_schema"]:
        assert x["equal"], x
