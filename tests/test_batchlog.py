"""The batch log: one version of each (batch, partition), whoever writes first."""

from __future__ import annotations

import threading

import pyarrow as pa

from pubsub_go.spark.batchlog import BatchLog

SCHEMA = pa.schema([("message_id", pa.string()), ("payload", pa.binary())])


def entry(tag: str, n: int) -> tuple[list[pa.RecordBatch], list[pa.Array]]:
    b = pa.record_batch([pa.array([f"{tag}{i}" for i in range(n)]), pa.array([b"x"] * n)], schema=SCHEMA)
    return [b], [pa.array([f"ack-{tag}{i}" for i in range(n)])]


def test_first_writer_wins_and_everyone_reads_its_version(tmp_path):
    log = BatchLog(str(tmp_path))
    results: dict[str, bool] = {}
    barrier = threading.Barrier(8)

    def attempt(tag: str) -> None:
        batches, acks = entry(tag, 5)
        barrier.wait()
        results[tag] = log.write_once("g", 3, 1, batches, acks, SCHEMA, {"rows": 5, "drained": True})

    threads = [threading.Thread(target=attempt, args=(f"a{i}-",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    winners = [tag for tag, won in results.items() if won]
    assert len(winners) == 1, results
    got = log.read("g", 3, 1)
    assert got is not None
    assert got.data.column("message_id").to_pylist() == [f"{winners[0]}{i}" for i in range(5)]
    assert got.ack_ids.to_pylist() == [f"ack-{winners[0]}{i}" for i in range(5)]
    assert got.stats == {"rows": 5, "drained": True}
    assert got.data.schema.names == SCHEMA.names  # ack ids are not a user column
    assert not [p for p in tmp_path.rglob("*.tmp-*")], "temporary files left behind"


def test_batches_listing_and_removal(tmp_path):
    log = BatchLog(str(tmp_path))
    for batch in (1, 2, 10):
        b, a = entry(f"b{batch}-", 2)
        assert log.write_once("g", batch, 0, b, a, SCHEMA, {})
    empty_b, empty_a = entry("e", 0)
    assert log.write_once("g", 10, 1, empty_b, empty_a, SCHEMA, {"rows": 0})
    assert log.batches("g") == [1, 2, 10]
    assert [len(e.ack_ids) for e in log.entries("g", 10)] == [2, 0]
    log.remove_batch("g", 2)
    assert log.batches("g") == [1, 10]
    assert log.read("g", 2, 0) is None
    assert log.batches("other-generation") == []
