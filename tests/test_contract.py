"""The contract between Python and the Go library (python/pubsub_go/_contract.json,
generated from Go by `go run ./go/cmd/contract`; go/cmd/contract's
TestContractIsCurrent fails while it is stale): the Python configs mirror
the Go structs field for field, every error kind maps to an exception, the
Spark options take the library's defaults and ranges from it, the raw
schema and decode error column agree, and no Python source restates the
built-in formats, the decoder limits or the connection fields."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import typing
from pathlib import Path

import pyarrow as pa
import pytest

import pubsub_go
from pubsub_go import client, contract, errors

# Python type of each contract type name.
_TYPES = {"str": str, "int": int, "bool": bool, "dict": dict, "DecoderConfig": client.DecoderConfig,
          "TopicSchema": client.TopicSchema, "SinkSchema": client.SinkSchema}


@pytest.mark.parametrize("cls,struct", [
    (client.SubscriberConfig, "subscriber_config"),
    (client.DecoderConfig, "decoder_config"),
    (client.PublisherConfig, "publisher_config"),
])
def test_config_dataclass_mirrors_the_go_struct(cls, struct):
    go = {f.name: f.type for f in contract.fields(struct)}
    hints = typing.get_type_hints(cls, vars(client))
    py = [f.name for f in dataclasses.fields(cls)]
    assert sorted(set(py) - set(go)) == [], f"{cls.__name__} has fields Go's {struct} lacks"
    assert sorted(set(go) - set(py)) == [], f"Go's {struct} has fields {cls.__name__} lacks"
    for name, typ in go.items():
        want = _TYPES[typ]
        allowed = set(typing.get_args(hints[name])) | {hints[name]}
        assert any(a is want or typing.get_origin(a) is want for a in allowed), \
            f"{cls.__name__}.{name} is {hints[name]}, Go's is {typ}"


@pytest.mark.parametrize("cls", [client.SubscriberConfig, client.DecoderConfig, client.PublisherConfig])
def test_python_restates_no_library_default(cls):
    """Numeric fields default to 0: the library applies its own default."""
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING and isinstance(f.default, int) and not isinstance(f.default, bool):
            assert f.default == 0, f"{cls.__name__}.{f.name} restates a default ({f.default})"


# Python's sources: nothing there may restate what the contract carries.
PACKAGE = Path(__file__).resolve().parents[1] / "python" / "pubsub_go"


def _restatements(source: str) -> list[str]:
    """What a Python source restates of the contract, as "line N: what":
    a literal list of the built-in decoder formats; three or more connection
    fields listed (a literal sequence, dict keys, class fields, a function's
    parameters); the decoder's default memory cap or time limit as a number
    bound to a name about them."""
    formats = set(contract.builtin_formats())
    conn = {f.name for f in contract.connection_fields()}
    mem = contract.limit("decoder_config", "memory_limit_mb").default
    ms = contract.limit("decoder_config", "timeout_ms").default
    # The time limit in ms, or in seconds as a float (an int of seconds is
    # too common a timeout elsewhere, e.g. a thread join's, to tell apart).
    limits = {"memory_limit": {mem}, "timeout": {ms, float(ms / 1000)}}
    found = []

    def strings(nodes: list[ast.expr | None]) -> set[str]:
        return {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}

    def bound(name: str, value: ast.expr | None, line: int) -> None:
        if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) \
                and not isinstance(value.value, bool):
            for word, values in limits.items():
                v = value.value
                if word in name.lower() and any(v == w and type(v) is type(w) for w in values):
                    found.append(f"line {line}: {name} = {value.value} (the decoder's default {word})")

    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = strings(list(node.elts))
            if formats <= items and len(items) == len(node.elts):
                found.append(f"line {line}: the built-in formats {sorted(items)}")
            if len(items & conn) >= 3:
                found.append(f"line {line}: connection fields {sorted(items & conn)}")
        elif isinstance(node, ast.Dict) and len(strings(node.keys) & conn) >= 3:
            found.append(f"line {line}: connection fields as keys {sorted(strings(node.keys) & conn)}")
        elif isinstance(node, ast.ClassDef):
            names = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            if len(names & conn) >= 3:
                found.append(f"line {line}: class {node.name} declares connection fields {sorted(names & conn)}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = a.posonlyargs + a.args + a.kwonlyargs
            if len({p.arg for p in params} & conn) >= 3:
                found.append(f"line {line}: {node.name}() takes connection fields as parameters")
            for p, d in zip(a.posonlyargs + a.args, [None] * (len(a.posonlyargs + a.args) - len(a.defaults))
                            + list(a.defaults), strict=True):
                bound(p.arg, d, line)
            for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
                bound(p.arg, d, line)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    bound(t.id, node.value, line)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound(node.target.id, node.value, line)
        elif isinstance(node, ast.keyword) and node.arg:
            bound(node.arg, node.value, line)
    return found


def test_python_restates_no_format_limit_or_connection_field():
    """The built-in formats, the decoder's memory cap and time limit and the
    connection fields come from the contract (contract.builtin_formats,
    contract.limit, contract.connection_fields), never a Python literal."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if hits := _restatements(path.read_text()):
            found[str(path.relative_to(PACKAGE))] = hits
    assert found == {}, f"Python restates what _contract.json carries: {found}"


def test_the_restatement_check_finds_each_kind():
    """The check above can fail: each kind of restatement is found."""
    fmts, conn = contract.builtin_formats(), [f.name for f in contract.connection_fields()]
    mem = contract.limit("decoder_config", "memory_limit_mb").default
    ms = contract.limit("decoder_config", "timeout_ms").default
    sample = "\n".join([
        f"FORMATS = {tuple(reversed(fmts))!r}",
        f"KEYS = {conn[:3]!r}",
        "d = {" + ", ".join(f"{k!r}: 1" for k in conn[:3]) + "}",
        "class C:\n" + "".join(f"    {k}: str = ''\n" for k in conn[:3]),
        f"def admin(op, *, {', '.join(f'{k}=None' for k in conn[:3])}): pass",
        f"def dec(x, memory_limit_mb: int = {mem}, *, timeout: float = {ms / 1000}): pass",
        f"DEFAULT_TIMEOUT_MS = {ms}",
        f"f(timeout_ms={ms})",
    ])
    hits = _restatements(sample)
    assert len(hits) == 9, hits
    assert _restatements("FORMATS = tuple(contract.builtin_formats())\nmax_wait_ms = 10\nt.join(timeout=10)\n") == []


def test_every_error_kind_has_an_exception_class():
    kinds = contract.error_kinds()
    assert sorted(set(kinds) - set(errors.BY_KIND)) == [], "kinds the library returns that Python does not map"
    assert sorted(set(errors.BY_KIND) - set(kinds)) == [], "kinds Python maps that the library never returns"
    for cls in set(errors.BY_KIND.values()):
        assert errors.BY_KIND[cls.kind] is cls, f"{cls.__name__}.kind {cls.kind!r} maps to another class"


def test_code_names_come_from_go():
    names = contract.code_names()
    assert names[5] == "NOT_FOUND" and names[14] == "UNAVAILABLE" and len(names) == 17
    assert errors.NotFoundError(5, "x").code_name == "NOT_FOUND"


def test_raw_schema_and_error_column_equal_pythons():
    from pubsub_go.schema import DECODE_ERROR_COLUMN, RAW_SCHEMA
    from pubsub_go.spark.read.options.schema_plan import RAW_SPARK_SCHEMA

    go = pa.ipc.read_schema(pa.py_buffer(contract.raw_schema_ipc()))
    assert [(f.name, f.type, f.nullable) for f in go] == [(f.name, f.type, f.nullable) for f in RAW_SCHEMA]
    from pyspark.sql.pandas.types import from_arrow_schema

    assert from_arrow_schema(go) == RAW_SPARK_SCHEMA
    assert contract.decode_error_column() == DECODE_ERROR_COLUMN


def test_source_options_take_the_library_defaults_and_ranges():
    from pubsub_go.spark.read.options.source import DEFAULT_BATCH_SIZE, MAX_WAIT_MS, OptionError, SourceOptions

    base = {"subscriptionId": "projects/p/subscriptions/s", "emulatorHost": "127.0.0.1:1",
            "batchLogLocation": "/tmp/pubsub-go-contract-test"}
    o = SourceOptions.parse(base)
    sub = "subscriber_config"
    top_bytes = contract.limit(sub, "max_outstanding_bytes").max
    with pytest.raises(OptionError, match=f"maxBytesPerPartition={top_bytes + 1} is out of range"):
        SourceOptions.parse({**base, "maxBytesPerPartition": str(top_bytes + 1)})
    assert o.streams_per_partition == contract.limit(sub, "streams").default
    assert o.batch_size == DEFAULT_BATCH_SIZE  # the source's own default, the library's range
    top_batch = contract.limit(sub, "batch_size").max
    with pytest.raises(OptionError, match=f"batchSize={top_batch + 1} is out of range"):
        SourceOptions.parse({**base, "batchSize": str(top_batch + 1)})
    # The source's own default (a streaming task's wait is latency), the library's range.
    assert o.max_wait_ms == MAX_WAIT_MS
    top_wait = contract.limit(sub, "max_wait_ms").max
    with pytest.raises(OptionError, match=f"maxWaitTimeMs={top_wait + 1} is out of range"):
        SourceOptions.parse({**base, "maxWaitTimeMs": str(top_wait + 1)})
    assert o.ack_deadline_seconds == contract.limit(sub, "ack_deadline_seconds").min
    top = contract.limit(sub, "streams").max
    assert SourceOptions.parse({**base, "streamsPerPartition": str(top)}).streams_per_partition == top
    with pytest.raises(OptionError, match=f"streamsPerPartition={top + 1} is out of range"):
        SourceOptions.parse({**base, "streamsPerPartition": str(top + 1)})
    dec = SourceOptions.parse({**base, "format": "json"}).decode
    assert dec is not None and dec.timeout_ms == contract.limit("decoder_config", "timeout_ms").default


def test_sink_options_take_the_library_defaults_and_ranges():
    from pubsub_go.spark.write.options import OptionError, SinkOptions

    base = {"topicId": "projects/p/topics/t", "emulatorHost": "127.0.0.1:1"}
    o = SinkOptions.parse(base)
    pub = "publisher_config"
    assert o.batch_max_messages == contract.limit(pub, "max_batch_messages").default
    assert o.batch_max_bytes == contract.limit(pub, "max_batch_bytes").default
    assert o.max_in_flight_bytes == contract.limit(pub, "max_in_flight_bytes").default
    assert o.retry_timeout_ms == contract.limit(pub, "retry_timeout_ms").default
    top = contract.limit(pub, "max_batch_messages").max
    with pytest.raises(OptionError, match=f"batchMaxMessages={top + 1} is out of range"):
        SinkOptions.parse({**base, "batchMaxMessages": str(top + 1)})


def test_reading_the_contract_does_not_load_the_library():
    code = ("import pubsub_go._native as n\n"
            "from pubsub_go.spark.read.options.source import SourceOptions\n"
            "from pubsub_go.spark.write.options import SinkOptions\n"
            "SourceOptions.parse({'subscriptionId': 'projects/p/subscriptions/s', 'emulatorHost': '127.0.0.1:1',"
            " 'batchLogLocation': '/tmp/x', 'format': 'json'})\n"
            "SinkOptions.parse({'topicId': 'projects/p/topics/t', 'emulatorHost': '127.0.0.1:1'})\n"
            "assert not n.is_loaded()\n"
            "assert 'libpubsubgo' not in open('/proc/self/maps').read()\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_errors_cross_as_code_and_kind(emulator):
    """The exception follows the kind the library returned, not the text."""
    with pytest.raises(pubsub_go.NotFoundError) as e:
        client.Subscriber(subscription="projects/p/subscriptions/no-such-sub", emulator_host=emulator.host_port)
    assert (e.value.code, e.value.kind, e.value.code_name) == (5, "not_found", "NOT_FOUND")
    # A handle the library does not know: FAILED_PRECONDITION of kind "closed".
    from pubsub_go import _native

    out = _native.ffi().new("struct PgSubscriberStats*")
    with pytest.raises(errors.ClosedError) as c:
        _native.call("pg_subscriber_stats", 987654321, out)
    assert (c.value.code, c.value.kind) == (9, "closed")
    assert c.value.message.startswith("FAILED_PRECONDITION: ") and c.value.message.count("FAILED_PRECONDITION") == 1


def test_publish_error_names_its_code_once(emulator):
    with pytest.raises(pubsub_go.NotFoundError) as e:
        client.Publisher(topic="projects/p/topics/no-such-topic", emulator_host=emulator.host_port)
    assert e.value.message.count("NOT_FOUND") == 1, e.value.message


def test_stats_cross_as_the_c_struct(emulator, google):
    _, sub_path = google.topic()
    with client.Subscriber(subscription=sub_path, emulator_host=emulator.host_port) as sub:
        stats = sub.stats()
    from pubsub_go import _native

    names = [n for n, _ in _native.ffi().typeof("struct PgSubscriberStats").fields]
    assert list(stats) == names and all(isinstance(v, int) for v in stats.values())
    assert {"pulled", "held", "quiet_ms", "ack_rejected", "flow_full_ms", "streams_down_ms", "blocked_ms",
            "late", "streams"} <= set(stats)
    assert stats["streams"] == 1, stats  # streams=1 by default, and nothing to catch up on
    # Appended, in the order of subscriber.Stats (capi's TestStatsStructMatchesGo).
    assert names[-5:] == ["flow_full_ms", "streams_down_ms", "blocked_ms", "late", "streams"], names


def test_worker_memory_budget_sizes_the_flow_control():
    from pubsub_go.spark.read.options.source import (
        DEFAULT_WORKER_MEMORY,
        FLOW_CONTROL_SHARE,
        MIN_WORKER_MEMORY,
        OptionError,
        SourceOptions,
    )
    from pubsub_go.spark.read.task.subscriber_config import subscriber_config

    base = {"subscriptionId": "projects/p/subscriptions/s", "emulatorHost": "127.0.0.1:1",
            "batchLogLocation": "/tmp/pubsub-go-contract-test"}
    default = SourceOptions.parse(base)
    assert default.max_bytes_per_partition == DEFAULT_WORKER_MEMORY // FLOW_CONTROL_SHARE
    assert subscriber_config(default).max_outstanding_bytes == default.max_bytes_per_partition
    # The default budget keeps a worker under 512 MB by the bound 1.25 x budget + 150 MiB.
    assert 1.25 * DEFAULT_WORKER_MEMORY / 2**20 + 150 < 512e6 / 2**20
    small = SourceOptions.parse({**base, "maxWorkerMemoryBytes": str(64 << 20)})
    assert small.max_bytes_per_partition == (64 << 20) // FLOW_CONTROL_SHARE
    both = SourceOptions.parse({**base, "maxWorkerMemoryBytes": str(64 << 20), "maxBytesPerPartition": "12345"})
    assert both.max_bytes_per_partition == 12345
    with pytest.raises(OptionError, match=f"maxWorkerMemoryBytes={MIN_WORKER_MEMORY - 1} is out of range"):
        SourceOptions.parse({**base, "maxWorkerMemoryBytes": str(MIN_WORKER_MEMORY - 1)})
