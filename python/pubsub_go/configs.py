"""The configs of the native library's handles, as Python dataclasses that
mirror the Go structs under their JSON keys (tests/test_contract.py holds
them to _contract.json). 0, "" and None mean the library's default:
defaults and ranges live in Go (contract.py), and so do the connection
fields, which ConnectionConfig takes from the contract."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, make_dataclass
from typing import Any

from . import contract

__all__ = ["ConnectionConfig", "DecoderConfig", "PublisherConfig", "SubscriberConfig"]


def _config_json(cfg: Any) -> str:
    """A config dataclass as the library's JSON (the field names are its
    keys): zero values are left out, so the library applies its default."""
    def dense(d: dict[str, Any]) -> dict[str, Any]:
        return {k: dense(v) if isinstance(v, dict) and k != "options" else v for k, v in d.items() if v}
    return json.dumps(dense(asdict(cfg)))


@dataclass
class TopicSchema:
    """Mirrors go/internal/decode.TopicSchema: decode each message by the
    revision of its topic's Pub/Sub schema (schemaFrom=topic)."""

    schema: str = ""  # projects/P/schemas/S
    type: str = ""  # AVRO
    revision_id: str = ""  # the reader revision: the columns come from it
    revisions: dict[str, str] = field(default_factory=dict)  # definitions known at query start, by revision id


@dataclass
class SinkSchema:
    """Mirrors go/internal/encode.SinkSchema: the topic's schema the sink
    encodes rows to (schemaFrom=topic on the sink)."""

    type: str = ""  # AVRO
    encoding: str = ""  # BINARY or JSON: the topic's
    definition: str = ""  # the revision's schema text
    revision_id: str = ""
    schema: str = ""  # projects/P/schemas/S


@dataclass
class DecoderConfig:
    """Mirrors go/internal/decode.DecoderConfig: schema mode's decoder."""

    wasm: str = ""  # a decoder module; empty: format names a built-in decoder
    format: str = ""  # a built-in format (contract.builtin_formats()), or the module's name in messages
    schema: str = ""  # the target: base64 of an Arrow IPC schema; empty: the decoder's own
    options: dict[str, str] = field(default_factory=dict)
    memory_limit_mb: int = 0
    timeout_ms: int = 0
    engine: str = ""  # one of contract.decoder_engines(); "": the default, auto (wasmtime, else wazero)
    wasmtime_library: str = ""  # wasmtime's C library (_libwasmtime.so in the wasmtime package)
    topic_schema: TopicSchema | None = None  # schemaFrom=topic

    def to_json(self) -> str:
        return _config_json(self)


def _connection_field(f: contract.Field) -> tuple[str, Any, Any]:
    # A secret (the inline credentials JSON) is left out of repr().
    return f.name, str | None, field(default=None, repr=not f.secret)


def _config_to_json(self: Any) -> str:
    return _config_json(self)


# Mirrors go/internal/clientopt.Options, which Go's subscriber and publisher
# configs embed: where Pub/Sub is and how to authenticate. Its fields are
# the contract's, not restated here. Keyword-only, so that the configs
# built on it keep their required field (subscription, topic) first.
ConnectionConfig = make_dataclass(
    "ConnectionConfig", [_connection_field(f) for f in contract.connection_fields()], kw_only=True,
    namespace={"__module__": __name__, "to_json": _config_to_json,
               "__doc__": "Where Pub/Sub is and how to authenticate (go/internal/clientopt.Options)."})


@dataclass
class SubscriberConfig(ConnectionConfig):  # type: ignore[misc, valid-type]
    """Mirrors go/internal/subscriber.Config."""

    subscription: str
    streams: int = 0
    catch_up_streams: int = 0
    catch_up_lag_ms: int = 0
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


@dataclass
class PublisherConfig(ConnectionConfig):  # type: ignore[misc, valid-type]
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
    encode_schema: SinkSchema | None = None  # schemaFrom=topic: rows' columns are the schema's record
