"""The main job (`python -m pubsub_go demo`, scripts/demo.sh) with a small
count: every message read back exactly once through the data plane, with
progress lines, and its exactly-once check able to fail; through Spark, the
front end that read named and a steady-state rate beside the total."""

from __future__ import annotations

import re
from typing import Any

import pytest


def test_demo_reads_every_message_once(capsys) -> None:
    """The data-plane path only: the Spark path is below, on the suite's
    shared session (one of its own would cost CI ~40 s)."""
    from pubsub_go.demo import run

    assert run(messages=2_000, spark=False) == 0
    out = capsys.readouterr().out
    assert "[2/4] published 2,000 messages" in out
    assert "[3/4] read through the data plane: 2,000/2,000" in out
    assert "data plane (Subscriber -> Arrow): 2,000 rows" in out
    assert "exactly once 2,000/2,000, duplicates 0, missing 0" in out
    assert "OK: 2,000 messages" in out


def test_exactly_once_check_counts_duplicates_and_missing() -> None:
    from pubsub_go.demo import Tally, _numbers, _sample

    t = Tally(4)
    t.add(_numbers(_sample(0, 3).column("payload")))  # 0, 1, 2: 3 missing
    t.add(_numbers(_sample(1, 1).column("payload")))  # 1 again
    assert t.verdict() == (False, "exactly once 2/4, duplicates 1, missing 1")
    t.add(_numbers(_sample(3, 1).column("payload")))
    assert t.verdict() == (False, "exactly once 3/4, duplicates 1, missing 0")


def test_demo_refuses_a_count_below_one(capsys) -> None:
    from pubsub_go.__main__ import main

    assert main(["demo", "--messages", "0"]) == 2
    assert "--messages must be at least 1, got 0" in capsys.readouterr().err


@pytest.mark.spark
def test_demo_through_spark_names_its_front_end_and_a_steady_state(capsys) -> None:
    """On the suite's session (getOrCreate: whichever front end it resolves
    format("pubsub-go") to; a plain one gets the Python data source): the
    demo says which read, and gives the steady state beside the total."""
    from pubsub_go.demo import run
    from sparkutil import spark_session

    assert run(messages=2_000, session=spark_session()) == 0
    out = capsys.readouterr().out
    said = re.search(r"Spark reads through the (Python data source|JVM DataSource V2 source) \(", out)
    assert said, out
    # The summary's name comes from the query's progress, not from the guess above.
    assert re.search(rf"Spark \(readStream, {said.group(1)}: \S+\): 2,000 rows in [\d.]+ s = [\d,]+ rows/s, "
                     r"start-up included; exactly once 2,000/2,000", out), out
    # 500 rows a micro-batch: the three after the first are full.
    assert re.search(r"Spark steady state: 1,500 rows in [\d.]+ s = [\d,]+ rows/s over micro-batches 2-4 of 4, "
                     r"500 rows each \(the first micro-batch carries start-up", out), out
    assert "OK: 2,000 messages" in out


def test_steady_state_leaves_out_the_first_and_a_short_last_batch() -> None:
    from pubsub_go.demo_spark import SparkFigures

    f = SparkFigures("x", 100, [(0, 100, 10.0), (1, 100, 11.0), (2, 100, 12.0), (3, 40, 20.0)])
    assert f.steady_state().startswith("200 rows in 2.00 s = 100 rows/s over micro-batches 2-3 of 4, 100 rows each")
    assert SparkFigures("x", 100, [(0, 100, 10.0), (1, 40, 16.0)]).steady_state().startswith(
        "not measured: no full micro-batch (100 rows) after the first")


class _Query:
    def __init__(self, description: str) -> None:
        self.recentProgress = [{"sources": [{"description": description}]}]


def test_the_front_end_is_read_from_the_progress() -> None:
    from pubsub_go.demo_spark import front_end_of as _front_end_of

    assert _front_end_of(_Query("pubsub-go[projects/p/subscriptions/s]")) == \
        "JVM DataSource V2 source: pubsub-go[projects/p/subscriptions/s]"
    py = "org.apache.spark.sql.execution.datasources.v2.python.PythonMicroBatchStreamWithTriggerAvailableNow@67a1"
    assert _front_end_of(_Query(py)) == "Python data source: PythonMicroBatchStreamWithTriggerAvailableNow"
    assert _front_end_of(_Query("KafkaV2[...]")) == ""


def test_without_pyspark_the_spark_step_says_why(monkeypatch: Any) -> None:
    from pubsub_go import _spark_version, demo_spark

    monkeypatch.setattr(_spark_version, "installed_pyspark_version", lambda: None)
    plan = demo_spark.spark_plan(False, None)
    assert plan.skip.startswith("PySpark is not installed: pip install 'pyspark>=4.0,<5'")


def test_on_pyspark_35_the_demo_takes_the_jvm_front_end(monkeypatch: Any) -> None:
    from pubsub_go import _spark_version, demo_spark, jvm

    monkeypatch.setattr(_spark_version, "installed_pyspark_version", lambda: "3.5.7")
    monkeypatch.setattr(jvm, "jar_path", lambda: "/x/pubsub-go-spark.jar")
    plan = demo_spark.spark_plan(False, None)
    assert plan.jvm and not plan.skip and "PySpark 3.5.7 has no Python data source" in plan.note

    def no_jar() -> str:
        raise FileNotFoundError("this pubsub-go install has no JVM jar")

    monkeypatch.setattr(jvm, "jar_path", no_jar)
    plan = demo_spark.spark_plan(False, None)
    assert plan.skip.startswith("PySpark 3.5.7 has no Python data source") and "no JVM jar" in plan.skip
