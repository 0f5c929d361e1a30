"""The sink's executor-side publisher pool (publisherIdleMs > 0): a
worker's publisher is reused by its next task, each task still counts and
numbers its own messages, nothing is lost or duplicated, a failed task
closes its publisher, and an idle one is closed. Against Google's official
emulator, read back with Google's Python client."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import StringType, StructField, StructType

from pubsub_go.spark.write.publisher_pool import POOL
from pubsub_go.spark.write.writer import make_writer

ID_ATTR = "pubsub_go_id"
PAYLOAD = StructType([StructField("payload", StringType())])


def rows(first: int, n: int) -> pa.RecordBatch:
    return pa.record_batch({"payload": [str(i) for i in range(first, first + n)]})


def pull_exactly(google, sub: str, n: int, timeout: float = 30) -> list:
    """Pulls until n messages came, then until a pull stays empty (a
    duplicate would show up there)."""
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += google.pull_all(sub, max_wait=1)
    return got + google.pull_all(sub, max_wait=2)


def test_consecutive_tasks_in_one_worker_share_one_publisher_and_deliver_exactly_once(google) -> None:
    """Two writes in this process stand for two tasks of one Python worker
    (this test is the worker): the second must not open a publisher, each
    commit message counts only its own task, ids restart from 0 under each
    task's prefix, and every row arrives exactly once."""
    topic, sub = google.topic()
    opts = {"emulatorHost": google.host_port, "topicId": topic, "idAttribute": ID_ATTR}
    POOL.close_all()
    opened = POOL.opened

    first = make_writer(opts, PAYLOAD, False, streaming=False)
    m1 = first.write(iter([rows(0, 300), rows(300, 200)]))
    assert POOL.idle() == 1, "a task that flushed everything keeps its publisher"
    second = make_writer(opts, PAYLOAD, False, streaming=False)
    m2 = second.write(iter([rows(500, 250)]))
    assert POOL.opened - opened == 1, "the second task must reuse the first task's publisher"

    assert (m1.messages, m2.messages) == (500, 250)
    assert m1.bytes == sum(len(str(i)) + len(ID_ATTR) + len(f"{m1.id_prefix}-{i}") for i in range(500))
    got = pull_exactly(google, sub, 750)
    assert sorted(int(m.message.data) for m in got) == list(range(750))
    ids = {int(m.message.data): m.message.attributes[ID_ATTR] for m in got}
    assert [ids[i] for i in range(500)] == [f"{first.write_id}-0-0-{r}" for r in range(500)]
    assert [ids[i] for i in range(500, 750)] == [f"{second.write_id}-0-0-{r}" for r in range(250)]
    POOL.close_all()


def test_failed_task_closes_its_publisher_and_idle_one_is_closed(google) -> None:
    from pubsub_go.errors import InvalidArgumentError

    topic, sub = google.topic()
    opts = {"emulatorHost": google.host_port, "topicId": topic, "publisherIdleMs": "1000"}
    POOL.close_all()
    opened = POOL.opened
    bad = pa.record_batch({"payload": pa.array(["x", None], pa.string())})
    with pytest.raises(InvalidArgumentError, match="payload is null"):
        make_writer(opts, PAYLOAD, False, streaming=False).write(iter([rows(0, 10), bad]))
    assert POOL.idle() == 0, "a failed task must not leave its publisher for the next one"

    make_writer(opts, PAYLOAD, False, streaming=False).write(iter([rows(10, 5)]))
    assert POOL.opened - opened == 2 and POOL.idle() == 1
    deadline = time.monotonic() + 10
    while POOL.idle() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert POOL.idle() == 0, "a publisher unused for publisherIdleMs must be closed"
    # At least once: the failed task's valid rows may have gone out; the
    # next task's rows all arrive.
    assert {int(m.message.data) for m in pull_exactly(google, sub, 5)} >= set(range(10, 15))


def test_publisher_idle_ms_zero_closes_after_every_task(google) -> None:
    topic, _ = google.topic()
    opts = {"emulatorHost": google.host_port, "topicId": topic, "publisherIdleMs": "0"}
    POOL.close_all()
    opened = POOL.opened
    for start in (0, 5):
        make_writer(opts, PAYLOAD, False, streaming=False).write(iter([rows(start, 5)]))
        assert POOL.idle() == 0
    assert POOL.opened - opened == 2


@pytest.fixture(scope="module")
def spark():
    from sparkutil import registered_session

    # One core: the micro-batches' single tasks run in one reused Python
    # worker (this venv's interpreter, so it runs the tree's package).
    yield from registered_session(master="local[1]", app="pubsub-go-publisher-pool",
                                  spark__sql__shuffle__partitions="1")


@pytest.mark.spark
@pytest.mark.timeout(120)
def test_micro_batches_reuse_the_workers_publisher_and_deliver_exactly_once(spark, google, tmp_path: Path) -> None:
    """Three micro-batches through one Python worker: every row arrives
    exactly once, each task's ids count from 0 under its own batch id, and
    the worker's log says the later tasks found the publisher kept."""
    import json

    topic, sub = google.topic()
    src = tmp_path / "in"
    src.mkdir()
    n_files, per_file = 3, 400
    for f in range(n_files):
        (tmp_path / "tmp.json").write_text("".join(json.dumps({"i": f * per_file + j}) + "\n"
                                                   for j in range(per_file)))
        (tmp_path / "tmp.json").rename(src / f"f{f}.json")
    q = (spark.readStream.schema("i LONG").option("maxFilesPerTrigger", 1).json(str(src))
         .selectExpr("CAST(i AS STRING) AS payload")
         .writeStream.format("pubsub-go")
         .options(emulatorHost=google.host_port, topicId=topic, idAttribute=ID_ATTR)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    assert q.awaitTermination(90), "the availableNow query did not finish"
    assert q.exception() is None

    n = n_files * per_file
    got = pull_exactly(google, sub, n, timeout=60)
    assert sorted(int(m.message.data) for m in got) == list(range(n))
    by_batch: dict[int, list[int]] = {}
    for m in got:
        _, batch, part, row = m.message.attributes[ID_ATTR].rsplit("-", 3)
        assert part == "0"
        by_batch.setdefault(int(batch), []).append(int(row))
    assert {b: sorted(r) for b, r in by_batch.items()} == {b: list(range(per_file)) for b in range(n_files)}

    # Ask the worker itself: with one core, Spark reuses its one Python
    # worker for every task, so a UDF run next lands in the process that
    # ran the sink's tasks and sees its pool.
    from pyspark.sql.functions import udf

    @udf("string")
    def probe(_):  # no type hints: PySpark reads them as a request for an Arrow UDF and warns
        from pubsub_go.spark.write.publisher_pool import POOL

        return json.dumps({"opened": POOL.opened, "kept": POOL.idle()})

    seen = json.loads(spark.range(1).select(probe("id")).first()[0])
    assert seen == {"opened": 1, "kept": 1}, f"three micro-batches must share one kept publisher: {seen}"
