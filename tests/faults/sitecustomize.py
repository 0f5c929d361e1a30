"""Arms pubsub-go's fault points (pubsub_go/spark/read/task/fault_points.py) in
every Python process started with this directory on PYTHONPATH: a test's
job process and the Spark Python workers it starts, which inherit its
PYTHONPATH. Test-only: the product never reads these variables.

PUBSUB_GO_FAULTS: a comma-separated list of point=count, e.g.
"post_record_modack=1", failing the first `count` calls at that point in
each process as a network outage would (UnavailableError).
PUBSUB_GO_FAULTS_LOG: a file each injected fault appends its point to, so
the test can tell that its faults were reached."""

from __future__ import annotations

import os
import threading

ENV = "PUBSUB_GO_FAULTS"
LOG_ENV = "PUBSUB_GO_FAULTS_LOG"


def _parse(spec: str, points: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in spec.split(","))):
        point, _, count = item.partition("=")
        if point not in points:
            raise ValueError(f"{ENV}: unknown fault point {point!r}; expected one of {', '.join(points)}")
        out[point] = int(count or "1")
    return out


def _arm(spec: str) -> None:
    from pubsub_go.spark.read.task import fault_points

    left = _parse(spec, fault_points.POINTS)
    lock = threading.Lock()

    def hook(point: str) -> None:
        with lock:
            if left.get(point, 0) <= 0:
                return
            left[point] -= 1
        if os.environ.get(LOG_ENV):
            with open(os.environ[LOG_ENV], "a") as f:
                f.write(f"{point} {os.getpid()}\n")
        from pubsub_go import contract
        from pubsub_go.errors import UnavailableError

        raise UnavailableError(contract.error_kinds()["unavailable"], f"injected fault at {point} ({ENV})")

    fault_points.install(hook)


if os.environ.get(ENV):
    _arm(os.environ[ENV])
