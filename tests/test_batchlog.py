"""The batch log: one version of each (batch, partition), whoever writes first."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc  # noqa: F401 (pa.ipc)
import pytest

from pubsub_go.spark.read.batchlog import ACK_COLUMN, MESSAGE_ID_COLUMN, STATS_KEY, BatchLog, spares

SCHEMA = pa.schema([("message_id", pa.string()), ("payload", pa.binary())])


def write_once(log: BatchLog, gen: str, batch: int, part: int, batches: list[pa.RecordBatch],
               acks: list[pa.Array], schema: pa.Schema, stats: dict) -> bool:
    """Writes a whole entry unless one exists; False if another attempt won."""
    w = log.writer(gen, batch, part)
    for b, a in zip(batches, acks, strict=True):
        w.write(b, a, b.column("message_id"))
    return w.publish(schema, stats)


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
        results[tag] = write_once(log, "g", 3, 1, batches, acks, SCHEMA, {"rows": 5, "drained": True})

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
        assert write_once(log, "g", batch, 0, b, a, SCHEMA, {})
    empty_b, empty_a = entry("e", 0)
    assert write_once(log, "g", 10, 1, empty_b, empty_a, SCHEMA, {"rows": 0})
    assert log.batches("g") == [1, 2, 10]
    assert [len(log.read_path(p).ack_ids) for p in log.entry_paths("g", 10)] == [2, 0]
    log.remove_batch("g", 2)
    assert log.batches("g") == [1, 10]
    assert log.read("g", 2, 0) is None
    assert log.batches("other-generation") == []



def test_last_activity_is_now_while_a_task_writes_else_the_newest_publication(tmp_path):
    """What the executors' subscriber pool counts idle time from: the
    query is active while its tasks write and its driver commits."""
    import time

    log = BatchLog(str(tmp_path))
    assert log.last_activity("g") is None, "no batch yet"
    b, a = entry("p", 2)
    assert write_once(log, "g", 1, 0, b, a, SCHEMA, {})
    published = log.last_activity("g")
    assert published is not None and abs(published - time.time()) < 5
    time.sleep(1.1)
    assert log.last_activity("g") == published, "nothing happened since the publication"
    w = log.writer("g", 2, 0)
    assert log.last_activity("g") == published, "a task with no rows yet is not active"
    w.write(b[0], a[0], b[0].column("message_id"))
    deadline = time.monotonic() + 10
    while not list(tmp_path.rglob("*.tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert time.time() - log.last_activity("g") < 0.5, "a task writing its entry is active now"
    assert w.publish(SCHEMA, {})
    assert time.time() - log.last_activity("g") < 5
    assert log.last_activity("g") > published
    time.sleep(1.1)
    before_removal = log.last_activity("g")
    log.remove_batch("g", 1)
    log.remove_batch("g", 2)
    assert log.last_activity("g") > before_removal, "the driver's removal of committed batches is activity"

def test_attempt_that_loses_the_race_fails_and_hands_its_messages_back(tmp_path):
    """Speculation: another attempt published this (batch, partition) first.
    This attempt has yielded rows already, so it must fail (Spark then keeps
    the winner's output) and nack what it took, so nothing is lost."""
    import pytest

    from emulators import topic_with_messages
    from pubsub_go.client import Emulator, Subscriber
    from pubsub_go.spark.read.options.source import SourceOptions
    from pubsub_go.spark.read.task.partition import PubSubPartition
    from pubsub_go.spark.read.task.run import LostRaceError, _pull_and_record

    with Emulator() as emu:
        sub = topic_with_messages(emu.host_port, "r", [b"m%d" % i for i in range(5)], ack_deadline_seconds=600)
        opts = SourceOptions.parse({"subscriptionId": sub, "emulatorHost": emu.host_port,
                                    "batchLogLocation": str(tmp_path), "maxWaitTimeMs": "2000"})
        log = BatchLog(str(tmp_path))
        b, a = entry("winner-", 2)
        assert write_once(log, "g", 1, 0, b, a, SCHEMA, {"rows": 2})
        part = PubSubPartition(gen="g", batch=1, index=0, max_rows=5)
        yielded = []
        with pytest.raises(LostRaceError):
            for batch in _pull_and_record(opts, part, log, None):
                yielded.append(batch.num_rows)
        assert sum(yielded) >= 1, "the attempt should have yielded rows before publishing"
        assert log.read("g", 1, 0).data.column("message_id").to_pylist() == ["winner-0", "winner-1"]
        # The loser's messages were nacked: they come back at once, not after 600 s.
        with Subscriber(subscription=sub, emulator_host=emu.host_port, streams=4) as again:
            got = 0
            for _ in range(20):
                bb, aa = again.next_batch(max_rows=10, wait_ms=500)
                got += bb.num_rows
                again.ack(aa)
                if got >= sum(yielded):
                    break
        assert got >= sum(yielded)
        assert not [p for p in tmp_path.rglob("*.tmp-*")], "the loser's temporary entry was left behind"


def test_recorded_ids_skip_an_entry_removed_after_the_listing(tmp_path):
    """The driver removes a batch once acked, at any moment: a task listing
    the recorded message ids must not fail on an entry gone since it listed
    it (seen in bench/tools/spark_memory.py at 100 B: FileNotFoundError)."""
    log = BatchLog(str(tmp_path))
    for batch in (1, 2):
        b, a = entry(f"r{batch}-", 2)
        assert write_once(log, "g", batch, 0, b, a, SCHEMA, {})
    read = log.read_message_ids

    def removed_meanwhile(path: str):
        if "00000000000000000001" in path:
            log.remove_batch("g", 1)  # committed and acked between listing and reading
        return read(path)

    log.read_message_ids = removed_meanwhile
    recorded = log.recorded_message_ids("g")
    assert len(recorded) == 2
    assert recorded.mask(pa.array(["r1-0", "r2-1", "r2-0"])).to_pylist() == [False, True, True]


def test_an_entry_that_names_no_ids_file_is_a_clear_error(tmp_path):
    """Development builds before 0.1.0 kept the message ids in a column of
    the entry; no release wrote that layout, so it is refused, by name,
    rather than read without its ids (redeliveries would not be dropped)."""
    log = BatchLog(str(tmp_path))
    b, a = entry("old-", 3)
    schema = SCHEMA.append(pa.field(ACK_COLUMN, pa.string())).append(pa.field(MESSAGE_ID_COLUMN, pa.string()))
    path = log.entry_path("g", 1, 0)
    Path(path).parent.mkdir(parents=True)
    with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, schema) as w:
        w.write_batch(pa.record_batch([*b[0].columns, a[0], b[0].column("message_id")], schema=schema))
        w.write_batch(pa.record_batch([pa.array([], t.type) for t in schema], schema=schema),
                      custom_metadata={STATS_KEY: b'{"rows": 3}'})
    with pytest.raises(ValueError, match="names no message ids file.*remove the batch log directory"):
        log.read_message_ids(path)
    with pytest.raises(ValueError, match="names no message ids file"):
        log.recorded_message_ids("g")


def test_a_new_entry_keeps_its_message_ids_in_their_own_file_only(tmp_path):
    """The ids are written once: to the file tasks read them from."""
    log = BatchLog(str(tmp_path))
    b, a = entry("n-", 4)
    assert write_once(log, "g", 1, 0, b, a, SCHEMA, {})
    path = log.entry_path("g", 1, 0)
    with pa.memory_map(path) as f:
        assert pa.ipc.open_file(f).schema.names == [*SCHEMA.names, ACK_COLUMN]
    assert log.read_message_ids(path).to_pylist() == ["n-0", "n-1", "n-2", "n-3"]


@pytest.mark.parametrize("recorded_ids, probe, want", [
    # Canonical integers (Pub/Sub's ids): the sorted-int64 index.
    (["5", "17", "2070443601311540"], ["17", "18", "2070443601311540", "4"], [True, False, True, False]),
    # "007" is not "7": a non-canonical probe must not match by number.
    (["7", "8"], ["007", "7", "+8", "8"], [False, True, False, True]),
    # Nor one that Arrow's cast would read as the same number.
    (["31", "0", "8"], ["0x1F", "00", "0", "-8", "8"], [False, False, True, False, True]),
    # Recorded ids that are not integers: the set index.
    (["a-1", "7"], ["7", "a-1", "a-2"], [True, True, False]),
    # Nothing recorded matches.
    (["1", "2"], ["3", "4"], None),
])
def test_recorded_ids_mask_is_exact(tmp_path, recorded_ids, probe, want):
    """Redeliveries of recorded messages are dropped by exact id, whatever
    the ids look like (the integer index is only a faster way to say so)."""
    log = BatchLog(str(tmp_path))
    half = len(recorded_ids) // 2
    for batch, ids in ((1, recorded_ids[:half]), (2, recorded_ids[half:])):
        b = pa.record_batch([pa.array(ids, pa.string()), pa.array([b"x"] * len(ids))], schema=SCHEMA)
        assert write_once(log, "g", batch, 0, [b], [pa.array([f"ack-{i}" for i in ids])], SCHEMA, {})
    mask = log.recorded_message_ids("g").mask(pa.array(probe, pa.string()))
    assert (mask.to_pylist() if mask is not None else None) == want


def test_recorded_ids_mask_reads_a_slice_of_a_batch(tmp_path):
    """A probe that is a slice (a filtered or split batch) starts at its
    own offset in the shared buffers: its ids are the ones checked for
    being canonical integers, not those before them."""
    log = BatchLog(str(tmp_path))
    b = pa.record_batch([pa.array(["7", "17"]), pa.array([b"x"] * 2)], schema=SCHEMA)
    assert write_once(log, "g", 1, 0, [b], [pa.array(["ack-7", "ack-17"])], SCHEMA, {})
    probe = pa.array(["17", "18", "007", "7", "17"]).slice(2, 2)
    mask = log.recorded_message_ids("g").mask(probe)
    assert mask is not None and mask.to_pylist() == [False, True]


def test_write_queue_is_bounded_in_bytes(tmp_path):
    """Batches waiting for the log's writer thread are memory the worker
    holds: their bytes stay within max_queue_bytes (one batch always fits),
    whatever the batch count, and every batch is still written in order."""
    log = BatchLog(str(tmp_path))
    b = pa.record_batch([pa.array([f"m{i}" for i in range(4)]), pa.array([b"x" * 1000] * 4)], schema=SCHEMA)
    w = log.writer("g", 1, 0, max_queue_bytes=3 * b.nbytes)
    peak = 0
    gate = threading.Event()
    append = w._append

    def slow_append(*item):
        nonlocal peak
        peak = max(peak, w._queued_bytes)
        gate.wait(5)
        append(*item)

    w._append = slow_append
    writer = threading.Thread(target=lambda: [w.write(b, pa.array([f"a{i}" for i in range(4)]), b.column("message_id"))
                                              for _ in range(10)])
    writer.start()
    writer.join(0.5)
    assert writer.is_alive(), "ten batches were queued while the writer thread was stuck: the queue is unbounded"
    assert w._queued_bytes <= 3 * b.nbytes
    gate.set()
    writer.join(10)
    assert w.publish(SCHEMA, {})
    assert peak <= 3 * b.nbytes
    assert log.read("g", 1, 0).data.num_rows == 40


def test_a_removed_entrys_file_is_reused_in_place_and_reads_back_exactly(tmp_path):
    """On a local file system a committed entry's file becomes a spare that
    the next writer overwrites in place (no new pages to allocate, none to
    free): the new entry reads back exactly, whether it is shorter than
    the old file (the rest is cut off) or longer."""
    import os

    log = BatchLog(str(tmp_path))
    big, big_acks = entry("old-", 500)
    assert write_once(log, "g", 1, 0, big, big_acks, SCHEMA, {"rows": 500})
    old_file = os.stat(log.entry_path("g", 1, 0))
    log.remove_batch("g", 1)
    assert log.batches("g") == []
    assert len(os.listdir(spares.spare_dir(log.root, "g"))) == 1

    small, small_acks = entry("new-", 3)
    assert write_once(log, "g", 2, 0, small, small_acks, SCHEMA, {"rows": 3})
    reused = os.stat(log.entry_path("g", 2, 0))
    assert reused.st_ino == old_file.st_ino, "the spare was not reused"
    assert reused.st_size < old_file.st_size, "the old entry's tail was not cut off"
    got = log.read("g", 2, 0)
    assert got.data.column("message_id").to_pylist() == [f"new-{i}" for i in range(3)]
    assert got.ack_ids.to_pylist() == [f"ack-new-{i}" for i in range(3)]
    assert got.stats == {"rows": 3}
    assert os.listdir(spares.spare_dir(log.root, "g")) == []

    log.remove_batch("g", 2)
    longer, longer_acks = entry("long-", 2000)
    assert write_once(log, "g", 3, 0, longer, longer_acks, SCHEMA, {})
    assert os.stat(log.entry_path("g", 3, 0)).st_ino == old_file.st_ino
    assert log.read("g", 3, 0).data.column("message_id").to_pylist() == [f"long-{i}" for i in range(2000)]


def _read_ids_while_an_entry_is_reused(root: str, out: str) -> None:
    """In a process of its own: a mapped read of a file cut short dies of SIGBUS."""
    import json

    import pyarrow.ipc as ipc

    log = BatchLog(root)
    for batch in (1, 2):
        b, a = entry(f"long{batch}-", 30_000)
        assert write_once(log, "g", batch, 0, b, a, SCHEMA, {})
    real, opened = ipc.open_file, []

    def open_then_reuse(*args, **kwargs):
        reader = real(*args, **kwargs)
        opened.append(1)
        if len(opened) == 1:  # batch 1's entry, just opened: the driver removes it, a task reuses its file
            log.remove_batch("g", 1)
            short, acks = entry("short3-", 10)
            assert write_once(log, "g", 3, 0, short, acks, SCHEMA, {})
        return reader

    ipc.open_file = open_then_reuse
    recorded = log.recorded_message_ids("g")  # lists batches 1 and 2
    with open(out, "w") as f:
        json.dump(sorted(x for i in recorded._indexes for x in (i.strings or ())), f)


def test_a_reader_of_an_entry_removed_and_reused_meanwhile_sees_it_gone(tmp_path):
    """A task indexes the recorded message ids of the entries it listed.
    If the driver removes one and another task overwrites its file (shorter)
    while the task reads it, the read must count the entry as removed (its
    batch was committed): not fail, not crash, not index the new data."""
    import json
    import multiprocessing

    out = tmp_path / "ids.json"
    child = multiprocessing.get_context("spawn").Process(target=_read_ids_while_an_entry_is_reused,
                                                         args=(str(tmp_path / "log"), str(out)))
    child.start()
    child.join(60)
    assert child.exitcode == 0, f"the reader died (exit {child.exitcode}; -7 is SIGBUS)"
    assert json.loads(out.read_text()) == sorted(f"long2-{i}" for i in range(30_000))


def test_spares_are_bounded_and_dropped_when_the_query_stops(tmp_path):
    import os

    log = BatchLog(str(tmp_path))
    for part in range(spares.MAX_SPARES + 3):
        b, a = entry(f"p{part}-", 2)
        assert write_once(log, "g", 1, part, b, a, SCHEMA, {})
    log.remove_batch("g", 1)
    spare_dir = spares.spare_dir(log.root, "g")
    assert len(os.listdir(spare_dir)) == spares.MAX_SPARES
    assert log.batches("g") == []
    log.drop_spares("g")
    assert not os.path.exists(spare_dir)
    assert os.listdir(tmp_path / "g") == []


def test_the_drivers_mapped_reads_match_copied_reads_and_outlive_the_file(tmp_path):
    """The driver reads entries through a mapping (row counts, then ack ids
    at the commit). It must see what a copying read sees, and the ack ids
    it keeps must stay valid after the entry is removed and its file reused
    by a later task."""
    from pubsub_go.spark.read.driver.logged_batches import LoggedBatches

    log = BatchLog(str(tmp_path))
    b, a = entry("m-", 3000)
    assert write_once(log, "g", 1, 0, b, a, SCHEMA, {"rows": 3000})
    logged = LoggedBatches(log)
    [info] = logged.entries("g", 1)
    assert (info.rows, info.stats) == (3000, {"rows": 3000})
    [acks] = logged.ack_ids([info])
    assert acks.equals(log.read("g", 1, 0).ack_ids)

    logged.remove("g", 1)
    b2, a2 = entry("other-", 10)
    assert write_once(log, "g", 2, 0, b2, a2, SCHEMA, {})  # reuses batch 1's file, cut short
    assert acks.to_pylist() == [f"ack-m-{i}" for i in range(3000)]


def test_a_mapped_read_of_an_empty_file_is_an_arrow_error(tmp_path):
    log = BatchLog(str(tmp_path))
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(pa.ArrowInvalid):
        log.read_path(str(empty), mapped=True)
