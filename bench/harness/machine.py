"""What the run ran on: cores, CPU, memory, load, software versions and
the source tree's commit."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from .procs import REPO


def _out(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)
        return (r.stdout or r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return "n/a"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return 0.0


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def describe() -> dict[str, str]:
    java = _out(["java", "-version"]).splitlines()
    dirty = _out(["git", "status", "--porcelain", "--", "go", "python", "bench"])
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu_model(),
        "memory": f"{mem_gib():.1f} GiB",
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pyspark": _version("pyspark"),
        "pyarrow": _version("pyarrow"),
        "google-cloud-pubsub": _version("google-cloud-pubsub"),
        "grpcio": _version("grpcio"),
        "go": _out(["go", "version"]),
        "java": java[0] if java else "n/a",
        "commit": _out(["git", "rev-parse", "--short", "HEAD"])
        + (" + uncommitted changes in go/, python/ or bench/" if dirty and dirty != "n/a" else ""),
    }
