"""Sink options and input schema: parsed and validated on the driver when
Spark asks for a writer, before any task runs, with errors that name the
option (or column) and say what would be right."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.types import BinaryType, MapType, StringType, StructType, TimestampNTZType, TimestampType

from ... import contract
from ...client import topic_path
from .. import aliases
from ..connection_options import ConnectionOptions, connection_options, resource_path
from ..option_table import SINK, table, text
from ..optparse import OptionError

if TYPE_CHECKING:
    from ...client import PublisherConfig, SinkSchema

# Every option the sink understands (the option table's), plus the ones
# Spark itself passes to a streaming sink; anything else is a typo.
OPTIONS = table(SINK)
DOCUMENTED = OPTIONS.documented()
KNOWN = set(OPTIONS.canonical())
ALIASES = aliases.SINK_ALIASES
ALIAS_NAMES = {n.lower() for n in aliases.alias_names(ALIASES)}
SPARK_OWNED = {"checkpointlocation"}

# The column that routes a row to its topic (a topic id or a full path).
TOPIC_COLUMN = "topic"
# The timestamp column timestampAttribute takes when timestampColumn is not given.
DEFAULT_TIMESTAMP_COLUMN = OPTIONS.default("timestampColumn")

ACCEPTED_COLUMNS = (
    "accepted columns: payload (binary or string, required), "
    "attributes (map<string,string>, optional), ordering_key (string, optional), "
    f"{TOPIC_COLUMN} (string, optional: routes the row), "
    "and with timestampAttribute its timestampColumn (timestamp)"
)


@dataclass(frozen=True)
class SinkOptions:
    """The validated sink options; picklable, shipped to every task."""

    topic: str | None  # projects/P/topics/T; None: every row names its topic (the topic column)
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
    timestamp_attribute: str | None = None
    timestamp_column: str = DEFAULT_TIMESTAMP_COLUMN
    compression: str = OPTIONS.default("compression")
    compression_bytes_threshold: int = 0  # 0: the library's default
    # The project of short topic ids in the topic column (projectId, else
    # the default project); None: only full paths are accepted there.
    project: str | None = None
    # schemaFrom=topic: the input's columns (but the message's own) are the
    # fields of the topic schema's record, encoded into each payload
    # (docs/sink.md, "Writing to a topic with a schema").
    schema_from_topic: bool = False
    schema_revision: str | None = None  # pinned; None: the newest the topic accepts
    # The schema as the driver read it (topic_schema.py), for the tasks.
    encode_schema: SinkSchema | None = None

    @staticmethod
    def parse(options: Mapping[str, str], routed: bool = False) -> SinkOptions:
        """routed: the input has a topic column, so topicId is optional
        (the topic of rows whose column is null)."""
        opts = aliases.resolve(options, ALIASES, OPTIONS.canonical())
        try:
            return SinkOptions._parse(options, opts, routed)
        except OptionError as e:
            raise aliases.as_given(e, opts) from None

    @staticmethod
    def _parse(options: Mapping[str, str], opts: Mapping[str, str], routed: bool) -> SinkOptions:
        if opts.get("path"):
            raise OptionError("pubsub-go takes no path: call save() without one and set "
                              ".option('topicId', ...) (with projectId, or a full projects/P/topics/T)")
        unknown = sorted({str(k).lower() for k in options} - KNOWN - ALIAS_NAMES - SPARK_OWNED - {"path"})
        if unknown:
            raise OptionError(f"unknown option(s) {unknown} for writing to pubsub-go; known options: "
                              f"{', '.join(DOCUMENTED)} (see docs/sink.md)")
        conn = connection_options(opts)
        path: str | None = None
        if not routed or (text(opts, "topicId") or ""):
            path = resource_path(opts, "topicId", "topic", topic_path, conn,
                                 why=" to write to pubsub-go (or a topic column that names each row's topic)")
        project = text(opts, "projectId")
        if routed and project is None:
            # Not ADC's project (default_project): that would load the Go
            # library on the driver, which the sink never does.
            project = (path.split("/")[1] if path else None) or \
                (os.environ.get("GOOGLE_CLOUD_PROJECT") or "").strip() or conn.project_from_credentials()

        id_attr = _attribute_key(opts, "idAttribute", "pubsub_go_id")
        ts_attr = _attribute_key(opts, "timestampAttribute", "event_time_ms")
        if ts_attr is not None and ts_attr == id_attr:
            raise OptionError(f"options idAttribute and timestampAttribute are both {ts_attr!r}: pick two names")
        ts_column = (text(opts, "timestampColumn") or "")
        if ts_column and ts_attr is None:
            raise OptionError("option timestampColumn is set but timestampAttribute is not: set timestampAttribute "
                              "to the attribute that receives the column's event time")
        schema_from = (text(opts, "schemaFrom") or "")
        if schema_from and schema_from.lower() != "topic":
            raise OptionError(f"option schemaFrom={schema_from!r} is not supported; expected topic (encode the "
                              "input's columns to the Pub/Sub schema of the topic)")
        revision = text(opts, "schemaRevision")
        if revision and not schema_from:
            raise OptionError("option schemaRevision only applies to schemaFrom=topic")
        if schema_from and routed:
            raise OptionError(f"option schemaFrom=topic does not go with a {TOPIC_COLUMN} column: rows routed to "
                              "several topics could meet several schemas; write to one topicId")
        compressions = OPTIONS["compression"].values or ()
        compression = (text(opts, "compression") or OPTIONS.default("compression")).lower()
        if compression not in compressions:
            raise OptionError(f"option compression={text(opts, 'compression')!r}: accepted values are "
                              f"{', '.join(compressions)}")

        return SinkOptions(
            topic=path,
            project=project,
            conn=conn,
            batch_max_messages=OPTIONS.value(opts, "batchMaxMessages"),
            batch_max_bytes=OPTIONS.value(opts, "batchMaxBytes"),
            linger_ms=OPTIONS.value(opts, "lingerMs"),
            max_in_flight_bytes=OPTIONS.value(opts, "maxInFlightBytes"),
            enable_message_ordering=OPTIONS.value(opts, "enableMessageOrdering"),
            id_attribute=id_attr,
            publish_timeout_ms=OPTIONS.value(opts, "publishTimeoutMs"),
            retry_timeout_ms=OPTIONS.value(opts, "retryTimeoutMs"),
            # How long a worker keeps its publisher for the next task
            # (publisher_pool.py); 0 closes it after every task.
            publisher_idle_ms=OPTIONS.value(opts, "publisherIdleMs"),
            timestamp_attribute=ts_attr,
            timestamp_column=ts_column or DEFAULT_TIMESTAMP_COLUMN,
            compression=compression,
            compression_bytes_threshold=OPTIONS.value(opts, "compressionBytesThreshold"),
            schema_from_topic=bool(schema_from),
            schema_revision=revision,
        )

    def publisher_config(self, id_prefix: str = "", topic: str | None = None) -> PublisherConfig:
        """topic: the routed topic of a topic column's rows (default: topicId)."""
        from ...client import PublisherConfig

        topic = topic or self.topic
        if topic is None:
            raise ValueError("no topic: the caller routes rows by their topic column")
        return PublisherConfig(
            topic=topic,
            **self.conn.client_kwargs(),
            max_batch_messages=self.batch_max_messages,
            max_batch_bytes=self.batch_max_bytes,
            linger_ms=self.linger_ms,
            max_in_flight_bytes=self.max_in_flight_bytes,
            enable_message_ordering=self.enable_message_ordering,
            retry_timeout_ms=self.retry_timeout_ms,
            id_attribute=self.id_attribute or "",
            id_prefix=id_prefix if self.id_attribute else "",
            timestamp_attribute=self.timestamp_attribute or "",
            timestamp_column=self.timestamp_column if self.timestamp_attribute else "",
            compression=self.compression,
            compression_bytes_threshold=self.compression_bytes_threshold,
            encode_schema=self.encode_schema,
        )

    @property
    def destination(self) -> str:
        """Where rows go, for messages and logs."""
        if self.topic is None:
            return f"the topics of the {TOPIC_COLUMN} column"
        return self.topic

    def route(self, value: str | None) -> str:
        """The full topic path of a topic column's value (a null takes topicId)."""
        if value is None or not value.strip():
            if self.topic is None:
                raise OptionError(f"a row's {TOPIC_COLUMN} column is {'null' if value is None else 'empty'} and "
                                  "option topicId is not set: give every row a topic, or set topicId for rows "
                                  "without one")
            return self.topic
        try:
            return topic_path(self.project, value.strip())
        except ValueError as e:
            raise OptionError(f"{TOPIC_COLUMN} column value {value!r}: {e}; use a topic id (with projectId) or "
                              "projects/PROJECT/topics/ID") from None


def _attribute_key(opts: Mapping[str, str], name: str, example: str) -> str | None:
    """An option naming an attribute key, checked against the service's rules."""
    key = text(opts, name)
    if key is not None:
        if key.startswith("goog"):
            raise OptionError(f"option {name}={key!r}: attribute keys starting with 'goog' are "
                              f"reserved by Pub/Sub; pick another name, e.g. {example}")
        max_key = contract.publisher_service_limit("max_attribute_key_bytes")
        if len(key.encode()) > max_key:
            raise OptionError(f"option {name} is {len(key.encode())} bytes; attribute keys are "
                              f"limited to {max_key} bytes")
    return key


def validate_sink_schema(schema: StructType, opts: SinkOptions | None = None) -> None:
    """Raises OptionError naming every column that the sink cannot write."""
    ts_column = opts.timestamp_column if opts is not None and opts.timestamp_attribute else None
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
        elif f.name == TOPIC_COLUMN:
            if not isinstance(t, StringType):
                problems.append(f"column {TOPIC_COLUMN!r} has type {t.simpleString()}, expected string "
                                "(a topic id or projects/P/topics/T)")
        elif f.name == ts_column:
            if not isinstance(t, (TimestampType, TimestampNTZType)):
                problems.append(f"column {f.name!r} (timestampColumn) has type {t.simpleString()}, "
                                "expected timestamp")
        elif opts is not None and opts.schema_from_topic:
            pass  # a field of the topic schema's record: checked against it (topic_schema.py)
        elif f.name.lower() in ("payload", "attributes", "ordering_key", TOPIC_COLUMN):
            problems.append(f"column {f.name!r} must be spelled {f.name.lower()!r} "
                            "(names are case-sensitive)")
        else:
            problems.append(f"unexpected column {f.name!r} ({f.dataType.simpleString()})")
    from_topic = opts is not None and opts.schema_from_topic
    if from_topic and "payload" in seen:
        problems.insert(0, "column 'payload' does not go with schemaFrom=topic, which encodes the other columns "
                        "into the payload (drop it, or drop schemaFrom to write payload as it is)")
    elif not from_topic and "payload" not in seen:
        problems.insert(0, "missing column 'payload'")
    if ts_column is not None and ts_column not in seen:
        problems.append(f"missing column {ts_column!r}: timestampAttribute takes each row's event time from "
                        "it (set timestampColumn to name another timestamp column)")
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
