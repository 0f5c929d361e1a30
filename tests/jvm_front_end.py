"""Running Spark jobs through the JVM front end (tests/jvm/job.py) on each
supported PySpark line: 4.3 is the suite's own interpreter, 3.5.7 lives in a
venv of its own (made once, `pip install pyspark[connect]==3.5.7`: PyPI
builds it from its sdist, Python <= 3.11; the connect extra brings the Spark
Connect client's grpcio, grpcio-status, googleapis-common-protos, pandas and
pyarrow: REQUIREMENTS35), at $PUBSUB_GO_PYSPARK35_VENV.

A Spark Connect server on 3.5 needs Spark's spark-connect_2.12 jar (4.x
ships it in PySpark's jars): connect_server_jars() fetches it once from
Maven Central through jvm/classpath.sh's cache, as a user's
`--packages org.apache.spark:spark-connect_2.12:3.5.7` would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOB = Path(__file__).resolve().parent / "jvm" / "job.py"
ROOT = Path(__file__).resolve().parent.parent
PYSPARK35 = "3.5.7"
# The 3.5 Connect server (self-contained: its gRPC and protobuf are shaded in), as a Maven Central path.
CONNECT35 = f"org/apache/spark/spark-connect_2.12/{PYSPARK35}/spark-connect_2.12-{PYSPARK35}.jar"
# PySpark 3.5 with its Connect client's packages: pandas before 3 and a pyarrow that still takes the
# NumPy 1 that PySpark 3.5 asks for (numpy<2; pyarrow's newest need NumPy 2), as the 3.5 platforms have.
REQUIREMENTS35 = [f"pyspark[connect]=={PYSPARK35}", "pandas<3", "pyarrow<18"]
INSTALLED35 = ".pubsub-go-requirements"  # in the venv: the REQUIREMENTS35 it holds
VERSIONS = ["3.5", "4.3"]


def jar() -> str:
    """The jar under test: the installed package's, or $PUBSUB_GO_TEST_JAR
    (a jar built from a working tree, without reinstalling the package)."""
    import pubsub_go

    return os.environ.get("PUBSUB_GO_TEST_JAR") or pubsub_go.jar_path()


def venv35() -> Path:
    return Path(os.environ.get("PUBSUB_GO_PYSPARK35_VENV",
                               Path(tempfile.gettempdir()) / f"pubsub-go-pyspark-{PYSPARK35}"))


def python_for(line: str) -> str:
    """The interpreter whose PySpark is of that line; makes the 3.5 venv once."""
    if line == "4.3":
        return sys.executable
    venv = venv35()
    py = venv / "bin" / "python"
    if not py.exists():
        print(f"jvm tests: making {venv} with pyspark[connect]=={PYSPARK35} (once; a few minutes)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    marker = venv / INSTALLED35
    if not marker.exists() or marker.read_text() != " ".join(REQUIREMENTS35):  # new, or made for other ones
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        *REQUIREMENTS35], check=True, timeout=1800)
        marker.write_text(" ".join(REQUIREMENTS35))
    return str(py)


def connect_server_jars(line: str) -> list[str]:
    """The jars a Spark Connect server of that line needs besides Spark's own: none on 4.x,
    Spark's spark-connect_2.12 on 3.5 (fetched once into jvm/classpath.sh's cache)."""
    if line != "3.5":
        return []
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(CONNECT35 + "\n")
        f.flush()
        out = subprocess.run(["bash", str(ROOT / "jvm" / "classpath.sh"), f.name], check=True, text=True,
                             stdout=subprocess.PIPE, timeout=600).stdout
    return [x for x in out.strip().split(":") if x]


class Job:
    """A job running in its own interpreter; steps may wait for the test."""

    def __init__(self, line: str, spec: dict) -> None:
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env["PYSPARK_PYTHON"] = python_for(line)
        self.proc = subprocess.Popen([python_for(line), str(JOB), json.dumps(spec)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir())
        self.err: list[str] = []

    def wait_step(self, kind: str, timeout: float = 600) -> None:
        """Blocks until the job reports a step of that kind done."""
        deadline = time.monotonic() + timeout
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError("job ended before step " + kind + ":\n" + "".join(self.err[-60:]))
            self.err.append(line)
            if line.strip() == f"job: step {kind} done":
                return
        raise AssertionError(f"step {kind} not done in {timeout} s")

    def result(self, timeout: float = 900) -> dict:
        out, err = self.proc.communicate(timeout=timeout)
        self.err.append(err)
        lines = [x for x in out.splitlines() if x.startswith("RESULT ")]
        if self.proc.returncode != 0 or not lines:
            tail = "".join(self.err)[-6000:]
            raise AssertionError(f"job failed (exit {self.proc.returncode}):\n{tail}")
        return json.loads(lines[-1][len("RESULT "):])


def batches(run: list[dict]) -> list[dict]:
    """The progress reports of a run that read rows."""
    return [p for p in run if p["numInputRows"] > 0]
