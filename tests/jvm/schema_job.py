"""Schema-mode steps of a Spark job through the JVM front end, run by
tests/test_jvm_schema_mode.py in a fresh interpreter of the PySpark under
test (3.5.7 in its own venv, or the suite's 4.3). The session and helpers
are job.py's (argv[1] is its JSON spec); the steps are these:

- decode: an AvailableNow read in schema mode (a .schema(...) or none, the
  step's options, its own subscription and checkpoint) into the memory sink
  (a query named after the step); its schema, its rows as Spark's to_json of
  each row, and its progress, or the error the query (or load()) raised:
  expected (expect_error) or not, a step records its failure and the
  application goes on to the next step, since one application runs many
  scenarios. With ref, Spark's own decoding (a SQL expression over the
  payloads, e.g. from_json) of the same payloads, as to_json too.
- avro_vectors (4.x: to_avro/from_avro are built in): Avro payloads written
  by Spark's to_avro and what from_avro reads back (tests/test_schema_mode.py's vectors).
- arrow_schema (4.x): the Arrow schema the JVM front end sends Go for each
  DDL (go/capi/jni_schema.go) against the Python front end's
  (spark_to_arrow_schema).
"""

from __future__ import annotations

import base64
import json
import sys
import traceback
from pathlib import Path

import job
from job import SPEC, progress, session


def read(spark, step: dict):
    r = (spark.readStream.format("pubsub-go").option("subscriptionId", step.get("subscription", SPEC["subscription"]))
         .option("emulatorHost", SPEC["emulator"]))
    if step.get("schema"):
        r = r.schema(step["schema"])
    for k, v in {**SPEC.get("options", {}), **step.get("options", {})}.items():
        r = r.option(k, str(v))
    return r.load()


def decode(spark, step: dict) -> dict:
    out: dict = {}
    name = step["name"]
    timeout = SPEC.get("timeout", 600)
    q = None
    try:
        df = read(spark, step)
        out["schema"] = [f"{f.name}:{f.dataType.simpleString()}" for f in df.schema.fields]
        q = (df.writeStream.format("memory").queryName(name).trigger(availableNow=True)
             .option("checkpointLocation", f"{SPEC['checkpoint']}-{name}").start())
        q.awaitTermination(timeout)
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()))
        if q.isActive:
            raise TimeoutError(f"schema_job: query {name} not done in {timeout} s")
        out["progress"] = progress(q)
        out["rows"] = [r.j for r in spark.sql(f"SELECT to_json(struct(*)) AS j FROM {name}").collect()]
    except Exception as e:  # the error a user sees; the test says whether it wanted one
        out["error"] = str(e)[-20000:]
    finally:
        if q is not None and q.isActive:
            q.stop()
    ref = step.get("ref")
    if ref:
        try:
            data = [(i, base64.b64decode(p)) for i, p in zip(ref["ids"], ref["payloads"], strict=True)]
            static = spark.createDataFrame(data, "message_id STRING, payload BINARY")
            out["ref"] = {r.message_id: r.j for r in static.selectExpr("message_id", f"to_json({ref['expr']}) AS j")
                          .collect()}
        except Exception as e:
            out["ref_error"] = str(e)[-20000:]
    return out


def avro_vectors(spark, step: dict) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_schema_mode import AVRO_SCHEMA, avro_payloads

    payloads = avro_payloads(spark, step["n"])
    expr = f"from_avro(payload, '{json.dumps(AVRO_SCHEMA)}')"
    df = spark.createDataFrame([(p,) for p in payloads], "payload BINARY").selectExpr(f"{expr} AS r")
    return {"payloads": [base64.b64encode(p).decode() for p in payloads],
            "ref": [r.j for r in df.selectExpr("to_json(r) AS j").collect()],
            "schema": [f"{f.name}:{f.dataType.simpleString()}" for f in df.schema[0].dataType.fields],
            "avro_schema": json.dumps(AVRO_SCHEMA)}


def arrow_schema(spark, step: dict) -> list:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    jvm = spark.sparkContext._jvm
    out = []
    for ddl in step["ddls"]:
        schema = StructType.fromDDL(ddl)
        jtype = spark._jsparkSession.parseDataType(schema.json())
        b64 = jvm.io.pubsubgo.spark.bridge.Decoders.arrowSchemaBase64(jtype)
        mine = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(b64)))
        python = to_arrow_schema(schema, timezone="UTC")  # spark_to_arrow_schema on 4.3
        out.append({"ddl": ddl, "equal": mine.equals(python, check_metadata=False), "jvm": str(mine),
                    "python": str(python)})
    return out


def main() -> None:
    spark = session()
    result: dict = {"spark": spark.version}
    for step in SPEC["steps"]:
        kind = step["kind"]
        if kind not in ("decode", "avro_vectors", "arrow_schema"):
            raise ValueError(f"schema_job: unknown step kind {kind} (job.py's steps run in job.py)")
        try:
            if kind == "decode":
                result.setdefault("decoded", {})[step["name"]] = decode(spark, step)
            elif kind == "avro_vectors":
                result["avro"] = avro_vectors(spark, step)
            else:
                result["arrow_schema"] = arrow_schema(spark, step)
        except Exception:  # recorded for the step's test; the steps after it still run
            result.setdefault("step_errors", {})[step.get("name", kind)] = traceback.format_exc()[-20000:]
        print(f"job: step {kind} done", file=sys.stderr, flush=True)
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    assert job.SPEC is SPEC
    main()
