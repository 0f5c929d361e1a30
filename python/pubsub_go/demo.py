"""The main job: embedded emulator -> publish numbered sample messages ->
read every one back as Arrow batches through the Go data plane (one
subscription) and through spark.readStream.format("pubsub-go") (a second
subscription on the same topic) -> print rows/s of each and whether each
read every message exactly once. Progress lines show each step as it goes.

Spark reads through whichever front end format("pubsub-go") resolves to on
the session, and the demo says which: the Python data source on PySpark 4
after a plain `pip install`, the JVM DataSource V2 source when the session
has the jar (`--jvm`, or `pubsub_go.configure_spark`; on PySpark 3.5 the
only one). Spark's figure is given twice: the total, start-up included, and
the steady state over the full micro-batches after the first, the one to
compare with the data plane's.

Every message carries its number n in its JSON payload, so "exactly once"
is checked, not assumed: each path counts how often it saw each n."""

from __future__ import annotations

import sys
import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .client import Emulator, Publisher, Subscriber, admin

PROJECT = "pubsub-go-demo"
TOPIC = f"projects/{PROJECT}/topics/demo"
SUB_ARROW = f"projects/{PROJECT}/subscriptions/demo-arrow"
SUB_SPARK = f"projects/{PROJECT}/subscriptions/demo-spark"

# Enough to show the speed (the bar: a million through Spark, exactly
# once, in under 2 minutes warm on a 2-core machine; 70 s measured there).
DEFAULT_MESSAGES = 1_000_000
# Messages per published batch: large enough that building them in Python
# costs little per message, small enough that progress moves.
PUBLISH_CHUNK = 50_000
# A step that makes no progress this long fails the demo instead of hanging.
STALL_S = 120
PROGRESS_EVERY_S = 1.0


class Progress:
    """One progress line, rewritten in place on a terminal and printed at
    most once per PROGRESS_EVERY_S otherwise (a log keeps every line)."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.t0 = self._last = time.monotonic()
        self.tty = sys.stdout.isatty()

    def update(self, done: int, force: bool = False, note: str = "") -> None:
        now = time.monotonic()
        if not force and now - self._last < PROGRESS_EVERY_S:
            return
        self._last = now
        rate = done / max(now - self.t0, 1e-9)
        line = f"      {self.label}: {done:,}/{self.total:,} ({rate:,.0f} msg/s){note}"
        print(line, end="\r" if self.tty else "\n", flush=True)

    def done(self, done: int) -> float:
        """Prints the final line; returns the seconds since the start."""
        self.update(done, force=True)
        if self.tty:
            print(flush=True)
        return time.monotonic() - self.t0


def _sample(start: int, n: int) -> pa.RecordBatch:
    """Messages start..start+n-1: payload {"n": i, "sensor": "s<i%7>"},
    attributes source=demo and parity=even|odd (built column-wise: a
    million messages in well under a second)."""
    ids = pa.array(range(start, start + n), pa.int64())
    sensor = pc.subtract(ids, pc.multiply(pc.divide(ids, 7), 7))
    payload = pc.binary_join_element_wise('{"n": ', pc.cast(ids, pa.string()), ', "sensor": "s',
                                          pc.cast(sensor, pa.string()), '"}', "")
    pair = ["source", "parity"] * n
    items = (["demo", "even", "demo", "odd"] if start % 2 == 0 else ["demo", "odd", "demo", "even"]) * (n // 2 + 1)
    attrs = pa.MapArray.from_arrays(pa.array(range(0, 2 * n + 1, 2), pa.int32()), pa.array(pair, pa.string()),
                                    pa.array(items[:2 * n], pa.string()))
    return pa.record_batch({"payload": pc.cast(payload, pa.binary()), "attributes": attrs})


# The n of a demo payload (`{"n": 123, ...`), for pyarrow and for Spark SQL.
NUMBER_PATTERN = r'^\{"n": (\d+),'


def _numbers(payload: pa.Array) -> pa.Array:
    """The n of each demo payload."""
    found = pc.extract_regex(pc.cast(payload, pa.string()), NUMBER_PATTERN.replace("(", "(?P<n>"))
    return pc.cast(found.field("n"), pa.int64())


class Tally:
    """The message numbers one path saw, to count each exactly once."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.chunks: list[pa.Array] = []
        self.rows = 0

    def add(self, numbers: pa.Array) -> None:
        self.chunks.append(numbers)
        self.rows += len(numbers)

    def verdict(self) -> tuple[bool, str]:
        seen = pa.chunked_array(self.chunks, pa.int64())
        counts = pc.value_counts(seen).field("counts") if len(seen) else pa.array([], pa.int64())
        once = pc.sum(pc.equal(counts, 1)).as_py() or 0
        dup, missing = self.rows - len(counts), self.total - len(counts)
        return once == self.total, f"exactly once {once:,}/{self.total:,}, duplicates {dup:,}, missing {missing:,}"


def run(messages: int = DEFAULT_MESSAGES, spark: bool = True, session: Any = None, jvm: bool = False) -> int:
    """Runs the demo; returns the process exit code (0: every path read every
    message exactly once). session: a SparkSession to use (else one is
    started, local[2], and stopped at the end). jvm: the session started
    here gets the JVM front end's jar (pubsub_go.configure_spark)."""
    # Imported here: demo_spark takes Progress, Tally and the names from this module.
    from .demo_spark import SparkFigures, read_spark, spark_plan

    t0 = time.monotonic()
    plan = spark_plan(jvm, session) if spark else None
    with Emulator() as emu:
        host = emu.host_port
        print(f"[1/4] embedded emulator on {host}", flush=True)
        admin("create_topic", emulator_host=host, topic=TOPIC)
        for sub in (SUB_ARROW, SUB_SPARK) if spark else (SUB_ARROW,):
            admin("create_subscription", emulator_host=host, topic=TOPIC, subscription=sub,
                  ack_deadline_seconds=60)

        prog = Progress("[2/4] handed to the publisher", messages)
        with Publisher(topic=TOPIC, emulator_host=host) as pub:
            for start in range(0, messages, PUBLISH_CHUNK):
                pub.publish(_sample(start, min(PUBLISH_CHUNK, messages - start)))
                prog.update(start + min(PUBLISH_CHUNK, messages - start))
            res = pub.flush(timeout_ms=STALL_S * 1000)
        took = prog.done(res["published"])
        print(f"[2/4] published {res['published']:,} messages ({res['bytes']:,} bytes) in {took:.2f} s "
              f"({res['published'] / took:,.0f} msg/s)", flush=True)

        arrow = _read_arrow(host, messages)
        results = [("data plane (Subscriber -> Arrow)", arrow)]
        figures: SparkFigures | None = None
        if plan is not None and plan.skip:
            print(f"[3/4] Spark skipped: {plan.skip}", flush=True)
        elif plan is not None:
            tally, seconds, figures = read_spark(host, messages, session, plan)
            results.append((f"Spark (readStream, {figures.front_end})", (tally, seconds)))
        print("[4/4] summary:", flush=True)
        ok = True
        for name, (tally, seconds) in results:
            good, verdict = tally.verdict()
            ok &= good
            startup = ", start-up included" if figures is not None and name.startswith("Spark") else ""
            print(f"      {name}: {tally.rows:,} rows in {seconds:.2f} s = {tally.rows / seconds:,.0f} rows/s"
                  f"{startup}; {verdict}", flush=True)
        if figures is not None:
            print(f"      Spark steady state: {figures.steady_state()}", flush=True)
        elif plan is not None and plan.skip:
            print(f"      Spark: skipped ({plan.skip})", flush=True)
        print(f"      {'OK' if ok else 'MISMATCH'}: {messages:,} messages in {time.monotonic() - t0:.1f} s",
              flush=True)
        return 0 if ok else 1


def _read_arrow(host: str, messages: int) -> tuple[Tally, float]:
    """Reads SUB_ARROW with the Go data plane, acking each batch; stops at
    every message or STALL_S without any."""
    tally = Tally(messages)
    prog = Progress("[3/4] read through the data plane", messages)
    schema = None
    with Subscriber(subscription=SUB_ARROW, emulator_host=host) as sub:
        last = time.monotonic()
        while tally.rows < messages and time.monotonic() - last < STALL_S:
            b, acks = sub.next_batch(max_rows=0, wait_ms=200)
            if b.num_rows:
                schema = b.schema
                tally.add(_numbers(b.column("payload")))
                sub.ack(acks)
                last = time.monotonic()
            prog.update(tally.rows)
    took = prog.done(tally.rows)
    if schema is not None:
        print(f"      Arrow schema: {', '.join(f'{f.name} {f.type}' for f in schema)}", flush=True)
    return tally, took
