"""Running Spark jobs through the JVM front end (tests/jvm/job.py) on each
supported PySpark line: 4.3 is the suite's own interpreter, 3.5.7 lives in a
venv of its own (made once, `pip install pyspark==3.5.7`: PyPI builds it
from its sdist, Python <= 3.11), at $PUBSUB_GO_PYSPARK35_VENV."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOB = Path(__file__).resolve().parent / "jvm" / "job.py"
PYSPARK35 = "3.5.7"
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
        print(f"jvm tests: making {venv} with pyspark=={PYSPARK35} (once; a few minutes)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        f"pyspark=={PYSPARK35}"], check=True, timeout=1800)
    return str(py)


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
