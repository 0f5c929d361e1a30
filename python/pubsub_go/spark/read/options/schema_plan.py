"""Schema mode's plan: the output schema, what the Go data plane decodes.

The user's `.schema(...)` is the output. Columns named like a raw column
(message_id, publish_time, attributes, payload, ordering_key,
delivery_attempt) are filled from the message, the error column (column
mode) gets the decode error, and every other column is decoded from the
payload: those form the decoder's target schema. The subscriber decodes
each batch ahead of `Next` (go/internal/subscriber/decode_pool.go) and
returns decoded columns + raw columns + DECODE_ERROR_COLUMN; this module
picks the output columns from that batch without copying. What happens to
rows that failed to decode: on_decode_error.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from ....configs import DecoderConfig, TopicSchema
from ....decode_api import decoder_config
from ....errors import PubSubError
from ....schema import DECODE_ERROR_COLUMN, RAW_SCHEMA
from ...optparse import OptionError
from .decode_options import DecodeOptions

if TYPE_CHECKING:
    from ....decode_api import NativeDecoder

# The raw schema as Spark sees it: the source's schema without schema mode.
RAW_SPARK_SCHEMA: StructType = from_arrow_schema(RAW_SCHEMA)
# Raw columns a schema-mode output may contain, with their Spark types.
METADATA: dict[str, Any] = {f.name: f.dataType for f in RAW_SPARK_SCHEMA.fields}
# Added to a schema derived from the decoder (no .schema() given).
DERIVED_METADATA = ("message_id", "publish_time", "attributes")


def _arrow(schema: StructType) -> pa.Schema:
    from ...._spark_version import spark_to_arrow_schema

    # Exactly what PySpark expects of a Python data source's Arrow batches.
    return spark_to_arrow_schema(schema)


@dataclass(frozen=True)
class SchemaPlan:
    """Picklable: built on the driver, used by the tasks."""

    decode: DecodeOptions
    output: pa.Schema  # the batches handed to Spark
    target: pa.Schema  # the decoded columns: the decoder's target schema

    @staticmethod
    def build(dec: DecodeOptions, schema: StructType) -> SchemaPlan:
        names = [f.name for f in schema.fields]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise OptionError(f"the schema has duplicate columns: {', '.join(dupes)}")
        if dec.error_column and dec.error_column not in names:
            raise OptionError(f"onDecodeError=column writes the decode error to column {dec.error_column!r} "
                              f"(option errorColumn): add `{dec.error_column} STRING` to the schema")
        decoded = []
        for f in schema.fields:
            if f.name in METADATA:
                want = METADATA[f.name]
                if f.dataType != want or not f.nullable:
                    raise OptionError(f"column {f.name} is filled from the message and must be a nullable "
                                      f"{want.simpleString().upper()}, not {f.dataType.simpleString().upper()}"
                                      f"{'' if f.nullable else ' NOT NULL'}")
            elif f.name == dec.error_column:
                if f.dataType != StringType() or not f.nullable:
                    raise OptionError(f"the error column {f.name} (option errorColumn) must be a nullable STRING")
            else:
                if not f.nullable:
                    raise OptionError(f"decoded column {f.name} is NOT NULL; decoded columns must be nullable "
                                      "(a null value or a record that fails to decode gives null)")
                decoded.append(f)
        if not decoded:
            raise OptionError(f"the schema has no column to decode (all of {', '.join(names)} are filled from "
                              "the message); add the payload's fields")
        return SchemaPlan(decode=dec, output=_arrow(schema), target=_arrow(StructType(decoded)))

    def decoder_config(self, topic: TopicSchema | None = None) -> DecoderConfig:
        """The subscriber config's `decoder` (go/internal/decode.DecoderConfig);
        topic: schemaFrom=topic's schema, as the driver read it."""
        return _decoder_config(self.decode, self.target, topic)

    def project(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The output columns of a decoded batch (no copy)."""
        cols = []
        for name in self.output.names:
            cols.append(batch.column(DECODE_ERROR_COLUMN if name == self.decode.error_column else name))
        return pa.RecordBatch.from_arrays(cols, schema=self.output)

    def check_on_driver(self, topic: TopicSchema | None = None) -> None:
        """Opens the decoder on the driver, with the same native host the
        tasks use, so that a schema the decoder rejects fails the query at
        its start instead of in every task attempt."""
        try:
            _open_on_driver(self.decode, self.target, topic).close()
        except PubSubError as e:
            raise OptionError(f"the {self.decode.format} decoder rejects the schema or options: {e}") from None


def _decoder_config(dec: DecodeOptions, target: pa.Schema | None, topic: TopicSchema | None = None) -> DecoderConfig:
    """go/internal/decode.DecoderConfig: a built-in format runs natively
    (no module), a user's module in the sandbox."""
    cfg = decoder_config(None if dec.decoder_path else dec.format, target, dec.decoder_path,
                         dec.module_options(), timeout_ms=dec.timeout_ms, memory_limit_mb=dec.memory_limit_mb,
                         engine=dec.engine)
    cfg.topic_schema = topic
    return cfg


def _open_on_driver(dec: DecodeOptions, target: pa.Schema | None, topic: TopicSchema | None = None) -> NativeDecoder:
    from ....decode_api import NativeDecoder

    return NativeDecoder(_decoder_config(dec, target, topic))


def derive_schema(dec: DecodeOptions, topic: TopicSchema | None = None) -> StructType:
    """The output schema when no .schema() is given: the decoder's own
    (Avro: from avroSchema, as Spark's from_avro; protobuf: from the message
    type, as from_protobuf), top-level columns
    nullable, plus message_id, publish_time, attributes (and the error
    column in column mode)."""
    if dec.format == "json":
        raise OptionError("format=json needs a schema: spark.readStream.format('pubsub-go').schema("
                          "'id BIGINT, name STRING, ...'); columns named like message_id, publish_time or "
                          "attributes are filled from the message")
    what = {"avro": "option avroSchema", "protobuf": f"protobuf message {dec.protobuf.get('protobuf_message')}"}.get(
        dec.format, f"decoder {dec.decoder_path}")
    if topic is not None:
        what = f"schemaFrom=topic ({topic.schema} revision {topic.revision_id})"
    try:
        with _open_on_driver(dec, None, topic) as d:
            derived = d.schema
    except PubSubError as e:
        raise OptionError(f"{what}: {e}") from None
    reserved = set(METADATA) | {dec.error_column}
    clash = [n for n in derived.names if n in reserved]
    if clash:
        raise OptionError(f"{what}: field {clash[0]!r} is also a column filled from the message; give a "
                          ".schema(...) that leaves it out")
    fields = [StructField(f.name, f.dataType, True) for f in from_arrow_schema(derived).fields]
    fields += [StructField(n, METADATA[n], True) for n in DERIVED_METADATA]
    if dec.error_column:
        fields.append(StructField(dec.error_column, StringType(), True))
    return StructType(fields)


def limit_hint(dec: DecodeOptions, err: PubSubError) -> str:
    """A hint naming the source options behind a decoder limit error."""
    if err.kind == "decoder_time_limit":
        return f" (source option decoderTimeoutMs={dec.timeout_ms})"
    if err.kind == "decoder_memory_limit":
        return f" (source option decoderMemoryLimitMB={dec.memory_limit_mb})"
    return ""
