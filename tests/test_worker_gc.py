"""The worker process's garbage-collector set-up (spark/worker_gc.py) and
that the source's and the sink's tasks both do it."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest

from pubsub_go.spark import worker_gc


@pytest.fixture
def fresh_worker() -> Iterator[None]:
    gc.unfreeze()
    worker_gc._freezes = 0
    try:
        yield
    finally:
        gc.unfreeze()
        worker_gc._freezes = 0


def _walked(objs: list[object]) -> int:
    """How many of objs the cyclic collector still walks (frozen objects
    are in no generation it collects)."""
    walked = {id(o) for o in gc.get_objects()}
    return sum(id(o) in walked for o in objs)


def test_long_lived_objects_are_frozen_by_the_first_two_tasks(fresh_worker: None) -> None:
    """The first task freezes what is alive (so full collections stop
    walking PySpark's and pyarrow's objects); the second freezes what the
    first imported on its way; later tasks do not freeze the garbage of
    earlier ones."""
    worker_gc.freeze_long_lived()
    assert gc.get_freeze_count() > 1000, f"only {gc.get_freeze_count()} objects frozen"
    # What the first task's lazy imports leave alive (pandas' modules in a
    # real worker), as lists the collector tracks.
    imported: list[object] = [[i] for i in range(5000)]
    assert _walked(imported) == 5000
    worker_gc.freeze_long_lived()
    assert _walked(imported) == 0, "the second task did not freeze what the first left alive"
    later: list[object] = [[i] for i in range(5000)]
    worker_gc.freeze_long_lived()
    assert _walked(later) == 5000, "a third task froze again"
    del imported, later


def _sink_task() -> None:
    from pubsub_go.spark.write.options import SinkOptions
    from pubsub_go.spark.write.writer import publish_partition

    opts = SinkOptions.parse({"projectId": "p", "topicId": "t"})
    # No rows: the task leases no publisher, so no server is needed.
    publish_partition(opts, iter([]), 0, "q-0-0", "partition 0")


def _source_task() -> None:
    from types import SimpleNamespace

    from pubsub_go.spark.read.task import run as task

    class Stop(Exception):
        pass

    def stop(*_: object) -> None:
        raise Stop

    # The freeze comes before the task opens its batch log; stop it there.
    saved = task.BatchLog
    task.BatchLog = stop  # type: ignore[assignment,misc]
    try:
        with pytest.raises(Stop):
            next(task.read_partition(SimpleNamespace(batch_log_location="unused"), None))  # type: ignore[arg-type]
    finally:
        task.BatchLog = saved  # type: ignore[misc]


@pytest.mark.parametrize("run_task", [_sink_task, _source_task], ids=["sink", "source"])
def test_every_task_kind_freezes_its_worker(fresh_worker: None, run_task: Callable[[], None]) -> None:
    assert gc.get_freeze_count() == 0
    run_task()
    assert gc.get_freeze_count() > 1000
