"""The JVM front end (docs/jvm.md): the jar this wheel carries, with the
library inside, and the one call that puts it on a Spark session builder.

With the jar on a session's classpath, `format("pubsub-go")` reads through
the JVM DataSource V2 source (Spark resolves JVM data sources before Python
ones): the way to read on Spark 3.5, and past the Python runner on 4.x.
Nothing here imports PySpark or loads the library."""

from __future__ import annotations

from pathlib import Path
from typing import Any

JAR_NAME = "pubsub-go-spark.jar"


def jar_path() -> str:
    """The path of the JVM front end's jar inside the installed package."""
    jar = Path(__file__).resolve().parent / "_jars" / JAR_NAME
    if not jar.is_file():
        raise FileNotFoundError(
            f"this pubsub-go install has no JVM jar ({jar}): it was built without a JDK; "
            "rebuild with javac on PATH (PUBSUB_GO_JAR=1 makes that an error) or use a released wheel")
    return str(jar)


def configure_spark(builder: Any) -> Any:
    """Adds the jar to a `SparkSession.builder` (before `getOrCreate()`), as
    delta-spark's `configure_spark_with_delta_pip` does; returns the builder.
    Spark ships the jar to every executor (`spark.jars`), and the library
    inside it is loaded from there: nothing need be installed on workers."""
    jar = jar_path()
    try:
        current = builder._options.get("spark.jars", "")  # noqa: SLF001 - PySpark keeps no public getter
    except AttributeError:
        current = ""
    jars = [j for j in current.split(",") if j and Path(j).name != JAR_NAME]
    return builder.config("spark.jars", ",".join([*jars, jar]))
