"""Python face of the native data plane: Subscriber, Publisher, the
embedded Emulator and admin helpers. Arrow data crosses the boundary
through the Arrow C Data Interface: batches come back as pyarrow objects
with zero copies, and no Python object is made per message."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import pyarrow as pa

from . import _native
from .errors import closed_error


def _full_name(kind: str, project: str | None, name: str) -> str:
    """Accepts a short id plus project, or a full projects/P/<kind>/N path."""
    if name.startswith("projects/"):
        parts = name.split("/")
        if len(parts) != 4 or parts[2] != kind or not parts[1] or not parts[3]:
            raise ValueError(f"{name!r} is not a valid {kind[:-1]} path; expected projects/PROJECT/{kind}/ID")
        return name
    if "/" in name or not name:
        raise ValueError(f"{kind[:-1]} id {name!r} is invalid; expected an id or projects/PROJECT/{kind}/ID")
    if not project:
        raise ValueError(f"a short {kind[:-1]} id ({name!r}) needs a project id")
    return f"projects/{project}/{kind}/{name}"


def subscription_path(project: str | None, subscription: str) -> str:
    return _full_name("subscriptions", project, subscription)


def topic_path(project: str | None, topic: str) -> str:
    return _full_name("topics", project, topic)


def _config_json(cfg: Any) -> str:
    """A config dataclass as the library's JSON (the field names are its
    keys): zero values are left out, so the library applies its default."""
    def dense(d: dict[str, Any]) -> dict[str, Any]:
        return {k: dense(v) if isinstance(v, dict) and k != "options" else v for k, v in d.items() if v}
    return json.dumps(dense(asdict(cfg)))


class _Handle:
    """A native handle owned by the process that opened it."""

    _close_fn = ""
    _what = ""

    def _open(self, fn: str, config_json: str) -> None:
        h = _native.ffi().new("uint64_t*")
        _native.call(fn, config_json.encode(), h)
        self._h: int = h[0]
        self._pid = os.getpid()

    def _handle(self) -> int:
        if getattr(self, "_h", 0) == 0:
            raise closed_error(self._what)
        return self._h

    def close(self) -> None:
        if getattr(self, "_h", 0):
            h, self._h = self._h, 0
            _native.call(self._close_fn, h)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # Best effort only in the owning process; never across a fork.
        if getattr(self, "_h", 0) and getattr(self, "_pid", None) == os.getpid():
            try:
                self.close()
            except Exception:
                pass


def _ptr(cdata: Any) -> int:
    return int(_native.ffi().cast("uintptr_t", cdata))


# The configs mirror the Go structs field for field, under their JSON keys
# (tests/test_contract.py holds them to _contract.json). 0, "" and None
# mean the library's default: defaults and ranges live in Go (contract.py).


@dataclass
class DecoderConfig:
    """Mirrors go/internal/subscriber.DecoderConfig: schema mode's decoder."""

    wasm: str = ""  # a decoder module; empty: format names a built-in decoder
    format: str = ""  # json, avro, or the module's name in messages
    schema: str = ""  # the target: base64 of an Arrow IPC schema; empty: the decoder's own
    options: dict[str, str] = field(default_factory=dict)
    memory_limit_mb: int = 0
    timeout_ms: int = 0

    def to_json(self) -> str:
        return _config_json(self)


@dataclass(kw_only=True)
class ConnectionConfig:
    """Mirrors go/internal/clientopt.Options, which Go's subscriber and
    publisher configs embed: where Pub/Sub is and how to authenticate.
    Keyword-only, so that the configs built on it keep their required
    field (subscription, topic) first in the constructor."""

    emulator_host: str | None = None
    endpoint: str | None = None
    credentials_file: str | None = None  # a credentials JSON file
    credentials_json: str | None = field(default=None, repr=False)  # the same inline: a secret, never in repr
    impersonate_service_account: str | None = None
    iam_credentials_endpoint: str | None = None

    def to_json(self) -> str:
        return _config_json(self)


@dataclass
class SubscriberConfig(ConnectionConfig):
    """Mirrors go/internal/subscriber.Config."""

    subscription: str
    streams: int = 0
    max_outstanding_messages: int = 0
    max_outstanding_bytes: int = 0
    batch_size: int = 0
    max_wait_ms: int = 0
    ack_deadline_seconds: int = 0
    max_extension_seconds: int = 0
    open_timeout_ms: int = 0
    no_pull: bool = False  # open no stream: only ack, nack and modack ids pulled elsewhere
    arrival_cutoff_us: int = 0  # messages published later are released on arrival (stats()["late"]), never handed out
    decoder: DecoderConfig | None = None  # schema mode: decode payloads in pull()


class Pulled(NamedTuple):
    """One `Subscriber.pull` result."""

    batch: pa.RecordBatch
    ack_ids: pa.Array
    waited_out: bool  # short because the wait ran out with nothing more buffered


class Subscriber(_Handle):
    """A StreamingPull subscriber in the native data plane.

    `next_batch()` returns `(batch, ack_ids)`: a pyarrow RecordBatch in the
    raw (or decoded) schema and a pyarrow string array of the ack ids of the
    same rows: up to `max_rows`, fewer when `wait_ms` ran out first, or at
    the end of a batch the library built for another size (batches are
    built as messages arrive, `batch_size` rows each or the largest
    `max_rows` asked for if that is more, and handed over without copying).
    Every message handed out stays leased until acked, nacked or released;
    `close()` nacks what was pulled but never handed out.
    """

    _close_fn = "pg_subscriber_close"
    _what = "subscriber"

    def __init__(self, config: SubscriberConfig | None = None, /, **kwargs: Any) -> None:
        self._schema: pa.Schema | None = None
        self._out: tuple[Any, ...] | None = None  # reused output structs, see next_batch
        self._out_lock = threading.Lock()
        self._open("pg_subscriber_open", (config or SubscriberConfig(**kwargs)).to_json())

    def next_batch(self, max_rows: int = 0, wait_ms: int = 0) -> tuple[pa.RecordBatch, pa.Array]:
        """`(batch, ack_ids)`; see `pull` for whether the wait ran out."""
        got = self.pull(max_rows, wait_ms)
        return got.batch, got.ack_ids

    def pull(self, max_rows: int = 0, wait_ms: int = 0) -> Pulled:
        """Like `next_batch`, and says whether the batch is short because
        `wait_ms` ran out with nothing more buffered (`waited_out`), as
        opposed to a full batch or the end of one built for another size."""
        f = _native.ffi()
        if self._schema is None:
            # The first batch brings the schema, which never changes: later
            # calls skip its export and parsing.
            arr, sch, ack = f.new("struct ArrowArray*"), f.new("struct ArrowSchema*"), f.new("struct ArrowArray*")
            out = f.new("int32_t*")
            _native.call("pg_subscriber_next", self._handle(), max_rows, wait_ms, arr, sch, ack, f.NULL, out)
            self._schema = pa.Schema._import_from_c(_ptr(sch))
            batch = pa.RecordBatch._import_from_c(_ptr(arr), self._schema)
            return Pulled(batch, pa.Array._import_from_c(_ptr(ack), pa.string()), bool(out[0]))
        # pyarrow's import moves an ArrowArray out of its struct, so the same
        # two structs (and their addresses) serve every call.
        if os.getpid() != self._pid:
            _native.lib()  # raises ForkedProcessError: this Go runtime did not survive fork()
        with self._out_lock:
            if self._out is None:
                arr, ack, err = f.new("struct ArrowArray*"), f.new("struct ArrowArray*"), _native.new_error()
                out = f.new("int32_t*")
                self._out = (arr, ack, out, err, _ptr(arr), _ptr(ack), _native.lib().pg_subscriber_next)
            arr, ack, out, err, arr_p, ack_p, fn = self._out
            _native.check(fn(self._handle(), max_rows, wait_ms, arr, f.NULL, ack, f.NULL, out, err), err)
            return Pulled(pa.RecordBatch._import_from_c(arr_p, self._schema),
                          pa.Array._import_from_c(ack_p, pa.string()), bool(out[0]))

    def _with_ids(self, fn: str, ack_ids: pa.Array | list[str], *extra: Any) -> None:
        ids = ack_ids if isinstance(ack_ids, pa.Array) else pa.array(ack_ids, type=pa.string())
        if isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks()
        f = _native.ffi()
        arr, sch = f.new("struct ArrowArray*"), f.new("struct ArrowSchema*")
        ids._export_to_c(_ptr(arr), _ptr(sch))
        args: tuple[Any, ...] = (self._handle(), arr, sch, *extra)
        _native.call(fn, *args)

    def ack(self, ack_ids: pa.Array | list[str]) -> dict[str, Any]:
        """Acks the ids; returns {"done": n, "rejected": {reason: count}}.
        Rejected ids (exactly-once delivery subscriptions only, e.g. an
        expired lease) were not acked and will be redelivered; raises when
        ids failed in a way a retry may fix."""
        out = _native.ffi().new("char**")
        try:
            self._with_ids("pg_subscriber_ack_results", ack_ids, out)
        finally:
            text = _native.take_string(out[0])
        result = json.loads(text) if text else {}
        result.setdefault("done", 0)
        result.setdefault("rejected", {})
        return result

    def nack(self, ack_ids: pa.Array | list[str]) -> None:
        self._with_ids("pg_subscriber_nack", ack_ids)

    def modack(self, ack_ids: pa.Array | list[str], deadline_seconds: int) -> None:
        self._with_ids("pg_subscriber_modack", ack_ids, deadline_seconds)

    def release(self, ack_ids: pa.Array | list[str]) -> None:
        self._with_ids("pg_subscriber_release", ack_ids)

    def stats(self) -> dict[str, int]:
        """The counters of go/internal/subscriber.Stats, by their names in
        the header's struct PgSubscriberStats (the one definition)."""
        f = _native.ffi()
        out = f.new("struct PgSubscriberStats*")
        _native.call("pg_subscriber_stats", self._handle(), out)
        return {name: getattr(out, name) for name, _ in f.typeof("struct PgSubscriberStats").fields}


@dataclass
class PublisherConfig(ConnectionConfig):
    """Mirrors go/internal/publisher.Config."""

    topic: str
    max_batch_messages: int = 0
    max_batch_bytes: int = 0
    linger_ms: int = 0
    max_in_flight_bytes: int = 0
    max_concurrent_requests: int = 0
    enable_message_ordering: bool = False
    retry_initial_ms: int = 0
    retry_max_ms: int = 0
    retry_timeout_ms: int = 0
    id_attribute: str = ""
    id_prefix: str = ""
    open_timeout_ms: int = 0
    timestamp_attribute: str = ""
    timestamp_column: str = ""
    compression: str = ""
    compression_bytes_threshold: int = 0


class Publisher(_Handle):
    """Publishes Arrow record batches (`payload` binary/string, optional
    `attributes` map<string,string> and `ordering_key` string).
    `flush()` returns once the server acknowledged every message."""

    _close_fn = "pg_publisher_close"
    _what = "publisher"

    def __init__(self, config: PublisherConfig | None = None, /, **kwargs: Any) -> None:
        self._open("pg_publisher_open", (config or PublisherConfig(**kwargs)).to_json())

    def publish(self, batch: pa.RecordBatch | pa.Table) -> None:
        batches = batch.to_batches() if isinstance(batch, pa.Table) else [batch]
        f = _native.ffi()
        for b in batches:
            arr, sch = f.new("struct ArrowArray*"), f.new("struct ArrowSchema*")
            b._export_to_c(_ptr(arr), _ptr(sch))
            _native.call("pg_publisher_publish", self._handle(), arr, sch)

    def start_ids(self, prefix: str) -> None:
        """Rows published from now on get the ids `prefix-0`, `prefix-1`, ...
        (needs `id_attribute`): a publisher kept for several writes numbers
        each write's rows from 0, as a fresh one would."""
        _native.call("pg_publisher_start_ids", self._handle(), prefix.encode())

    def flush(self, timeout_ms: int = 0) -> dict[str, int]:
        out = _native.ffi().new("char**")
        try:
            _native.call("pg_publisher_flush", self._handle(), timeout_ms, out)
        finally:
            text = _native.take_string(out[0])
        return json.loads(text) if text else {}


class Emulator:
    """The embedded Pub/Sub emulator (Go's pstest fake), in this process."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        f = _native.ffi()
        h, addr = f.new("uint64_t*"), f.new("char**")
        _native.call("pg_emulator_start", f"{host}:{port}".encode(), h, addr)
        self._h = h[0]
        self.host_port: str = _native.take_string(addr[0])

    def stop(self) -> None:
        if self._h:
            h, self._h = self._h, 0
            _native.call("pg_emulator_stop", h)

    def __enter__(self) -> Emulator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def admin(op: str, *, emulator_host: str | None = None, endpoint: str | None = None,
          credentials_file: str | None = None, credentials_json: str | None = None,
          impersonate_service_account: str | None = None, iam_credentials_endpoint: str | None = None,
          **params: Any) -> dict[str, Any]:
    """Runs one admin op (create_topic, create_subscription, get_subscription,
    delete_topic, delete_subscription, seek, default_project; see
    docs/c-api.md) through the native library. The connection keywords are
    those of the configs."""
    conn = {"emulator_host": emulator_host, "endpoint": endpoint, "credentials_file": credentials_file,
            "credentials_json": credentials_json, "impersonate_service_account": impersonate_service_account,
            "iam_credentials_endpoint": iam_credentials_endpoint}
    req = {"op": op, **{k: v for k, v in {**conn, **params}.items() if v}}
    out = _native.ffi().new("char**")
    _native.call("pg_admin", json.dumps(req).encode(), out)
    return json.loads(_native.take_string(out[0]) or "{}")


def version() -> dict[str, Any]:
    out = _native.ffi().new("char**")
    _native.call("pg_version", out)
    return json.loads(_native.take_string(out[0]))


def version_info() -> dict[str, Any]:
    """What the loaded library was built from: its version, ABI, Go version and module versions."""
    out = _native.ffi().new("char**")
    _native.call("pg_version_info", out)
    return json.loads(_native.take_string(out[0]))
