"""Python face of the native data plane: Subscriber, Publisher, the
embedded Emulator and admin helpers. Arrow data crosses the boundary
through the Arrow C Data Interface: batches come back as pyarrow objects
with zero copies, and no Python object is made per message."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, NamedTuple

import pyarrow as pa

from . import _native
from .configs import ConnectionConfig, DecoderConfig, PublisherConfig, SinkSchema, SubscriberConfig, TopicSchema
from .errors import closed_error

# The configs are in configs.py; their names stay importable from here.
__all__ = ["ConnectionConfig", "DecoderConfig", "Emulator", "Publisher", "PublisherConfig", "Pulled", "SinkSchema",
           "Subscriber", "SubscriberConfig", "TopicSchema", "admin", "subscription_path", "topic_path", "version",
           "version_info"]


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

    def pause(self) -> None:
        """Ends the streams and receives nothing until `resume()`; what was
        pulled stays held (leases extended) and can still be handed out."""
        _native.call("pg_subscriber_pause", self._handle(), 1)

    def resume(self) -> None:
        """Opens the streams again after `pause()`."""
        _native.call("pg_subscriber_pause", self._handle(), 0)

    def stats(self) -> dict[str, int]:
        """The counters of go/internal/subscriber.Stats, by their names in
        the header's struct PgSubscriberStats (the one definition)."""
        f = _native.ffi()
        out = f.new("struct PgSubscriberStats*")
        _native.call("pg_subscriber_stats", self._handle(), out)
        return {name: getattr(out, name) for name, _ in f.typeof("struct PgSubscriberStats").fields}


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
    """The embedded Pub/Sub emulator (docs/emulator.md), in this process."""

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


def admin(op: str, **params: Any) -> dict[str, Any]:
    """Runs one admin op (create_topic, create_subscription, get_subscription,
    delete_topic, delete_subscription, seek, default_project; see
    docs/c-api.md) through the native library. Its keywords are the op's
    parameters and the connection fields of the configs (ConnectionConfig);
    None and empty values are left out."""
    req = {"op": op, **{k: v for k, v in params.items() if v}}
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
