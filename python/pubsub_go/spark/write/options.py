"""Sink options and input schema: parsed and validated on the driver when
Spark asks for a writer, before any task runs, with errors that name the
option (or column) and say what would be right."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.types import BinaryType, MapType, StringType, StructType

from ... import contract
from ...client import topic_path
from ..optparse import (
    CONNECTION_OPTIONS,
    ConnectionOptions,
    OptionError,
    bool_option,
    connection_options,
    go_int_option,
    int_option,
    resource_path,
)

if TYPE_CHECKING:
    from ...client import PublisherConfig

# Every option the sink understands (lower-case), plus the ones Spark
# itself passes to a streaming sink; anything else is a typo.
DOCUMENTED = [
    "projectId", "topicId", *CONNECTION_OPTIONS, "batchMaxMessages", "batchMaxBytes", "lingerMs",
    "maxInFlightBytes", "enableMessageOrdering", "idAttribute", "publishTimeoutMs", "retryTimeoutMs",
    "publisherIdleMs",
]
KNOWN = {n.lower() for n in DOCUMENTED}
SPARK_OWNED = {"checkpointlocation"}

ACCEPTED_COLUMNS = (
    "accepted columns: payload (binary or string, required), "
    "attributes (map<string,string>, optional), ordering_key (string, optional)"
)


@dataclass(frozen=True)
class SinkOptions:
    """The validated sink options; picklable, shipped to every task."""

    topic: str  # projects/P/topics/T
    conn: ConnectionOptions
    batch_max_messages: int
    batch_max_bytes: int
    linger_ms: int
    max_in_flight_bytes: int
    enable_message_ordering: bool
    id_attribute: str | None
    publish_timeout_ms: int
    retry_timeout_ms: int
    publisher_idle_ms: int

    @staticmethod
    def parse(options: Mapping[str, str]) -> SinkOptions:
        opts = {str(k).lower(): v for k, v in options.items()}
        if opts.get("path"):
            raise OptionError("pubsub-go takes no path: call save() without one and set "
                              ".option('topicId', ...) (with projectId, or a full projects/P/topics/T)")
        unknown = sorted(set(opts) - KNOWN - SPARK_OWNED - {"path"})
        if unknown:
            raise OptionError(f"unknown option(s) {unknown} for writing to pubsub-go; known options: "
                              f"{', '.join(DOCUMENTED)} (see docs/sink.md)")
        conn = connection_options(opts)
        path = resource_path(opts, "topicId", "topic", topic_path, conn, why=" to write to pubsub-go")

        id_attr = (opts.get("idattribute") or "").strip() or None
        if id_attr is not None:
            if id_attr.startswith("goog"):
                raise OptionError(f"option idAttribute={id_attr!r}: attribute keys starting with 'goog' are "
                                  "reserved by Pub/Sub; pick another name, e.g. pubsub_go_id")
            max_key = contract.publisher_service_limit("max_attribute_key_bytes")
            if len(id_attr.encode()) > max_key:
                raise OptionError(f"option idAttribute is {len(id_attr.encode())} bytes; attribute keys are "
                                  f"limited to {max_key} bytes")

        return SinkOptions(
            topic=path,
            conn=conn,
            batch_max_messages=go_int_option(opts, "batchMaxMessages", "publisher_config", "max_batch_messages",
                                             " (the service's limit of messages per Publish request)"),
            batch_max_bytes=go_int_option(opts, "batchMaxBytes", "publisher_config", "max_batch_bytes",
                                          " (a Publish request must stay under the 10 MB limit, with room for "
                                          "overhead)"),
            linger_ms=go_int_option(opts, "lingerMs", "publisher_config", "linger_ms"),
            max_in_flight_bytes=go_int_option(opts, "maxInFlightBytes", "publisher_config", "max_in_flight_bytes"),
            enable_message_ordering=bool_option(opts, "enableMessageOrdering", False),
            id_attribute=id_attr,
            publish_timeout_ms=int_option(opts, "publishTimeoutMs", 600_000, 1),
            retry_timeout_ms=go_int_option(opts, "retryTimeoutMs", "publisher_config", "retry_timeout_ms"),
            # How long a worker keeps its publisher for the next task
            # (publisher_pool.py); 0 closes it after every task.
            publisher_idle_ms=int_option(opts, "publisherIdleMs", 60_000, 0, 3_600_000),
        )

    def publisher_config(self, id_prefix: str = "") -> PublisherConfig:
        from ...client import PublisherConfig

        return PublisherConfig(
            topic=self.topic,
            **self.conn.client_kwargs(),
            max_batch_messages=self.batch_max_messages,
            max_batch_bytes=self.batch_max_bytes,
            linger_ms=self.linger_ms,
            max_in_flight_bytes=self.max_in_flight_bytes,
            enable_message_ordering=self.enable_message_ordering,
            retry_timeout_ms=self.retry_timeout_ms,
            id_attribute=self.id_attribute or "",
            id_prefix=id_prefix if self.id_attribute else "",
        )


def validate_sink_schema(schema: StructType) -> None:
    """Raises OptionError naming every column that the sink cannot write."""
    problems: list[str] = []
    seen: set[str] = set()
    for f in schema.fields:
        if f.name in seen:
            problems.append(f"duplicate column {f.name!r}")
            continue
        seen.add(f.name)
        t = f.dataType
        if f.name == "payload":
            if not isinstance(t, (BinaryType, StringType)):
                problems.append(f"column 'payload' has type {t.simpleString()}, expected binary or string")
        elif f.name == "attributes":
            if not (isinstance(t, MapType) and isinstance(t.keyType, StringType)
                    and isinstance(t.valueType, StringType)):
                problems.append(f"column 'attributes' has type {t.simpleString()}, "
                                "expected map<string,string>")
        elif f.name == "ordering_key":
            if not isinstance(t, StringType):
                problems.append(f"column 'ordering_key' has type {t.simpleString()}, expected string")
        elif f.name.lower() in ("payload", "attributes", "ordering_key"):
            problems.append(f"column {f.name!r} must be spelled {f.name.lower()!r} "
                            "(names are case-sensitive)")
        else:
            problems.append(f"unexpected column {f.name!r} ({f.dataType.simpleString()})")
    if "payload" not in seen:
        problems.insert(0, "missing column 'payload'")
    if problems:
        raise OptionError(
            f"cannot write this input to pubsub-go: {'; '.join(problems)}. {ACCEPTED_COLUMNS}; "
            "e.g. df.selectExpr(\"CAST(value AS BINARY) AS payload\")"
        )


def check_ordering(opts: SinkOptions, schema: StructType) -> None:
    """An ordering_key column needs enableMessageOrdering: say so before any task runs."""
    if "ordering_key" in schema.fieldNames() and not opts.enable_message_ordering:
        raise OptionError("the input has an ordering_key column but option enableMessageOrdering is false: "
                          "set .option('enableMessageOrdering', 'true') (subscriptions must enable ordering "
                          "too), or drop the column")
