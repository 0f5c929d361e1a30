"""The skips a full run may show, each with why it cannot run there. With
PUBSUB_GO_STRICT_SKIPS=1 (scripts/test.sh, so CI) any other skip fails the
run (tests/conftest.py), so a test that quietly stopped running is seen."""

from __future__ import annotations

# reason prefix -> why the run cannot avoid it
EXPECTED = {
    "PUBSUB_GO_WHEEL (the wheel under test) is not set":
        "tests/compat/test_install.py installs a built wheel into a venv; scripts/compat.sh runs it in each "
        "compatibility venv with the wheel CI built",
    "Spark's from_protobuf needs spark-protobuf":
        "Maven Central (the only Maven registry here) does not serve org.apache.spark:spark-protobuf_2.13, and "
        "bench/tools/build_spark_protobuf.sh needs Spark's Scala source, which no registry here serves; "
        "tests/protobuf_vectors.py's model is checked against it where it can be built",
}


def unexpected(reason: str) -> bool:
    reason = reason.removeprefix("Skipped: ")
    return not any(reason.startswith(prefix) for prefix in EXPECTED)
