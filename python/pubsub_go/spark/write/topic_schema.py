"""schemaFrom=topic on the sink: the driver reads the topic's Pub/Sub schema
(the pinned revision, else the newest the topic accepts) and checks the
input's columns against it before any task runs; the tasks' publishers
encode each row's columns to it (go/internal/encode) as the payload."""

from __future__ import annotations

import dataclasses

from pyspark.sql.types import StructType

from ...errors import PubSubError
from ..optparse import OptionError
from .options import SinkOptions


def with_topic_schema(opts: SinkOptions, schema: StructType) -> SinkOptions:
    """opts with the topic's schema; raises OptionError when the topic has
    none the sink encodes to, or when a column does not fit it."""
    import pyarrow as pa

    from ..._spark_version import spark_to_arrow_schema
    from ...client import Publisher, SinkSchema, admin

    assert opts.schema_from_topic and opts.topic is not None
    try:
        got = admin("get_topic_schema", topic=opts.topic, revision=opts.schema_revision, **opts.conn.client_kwargs())
    except PubSubError as e:
        raise OptionError(f"schemaFrom=topic: cannot read the schema of {opts.topic}: {e}") from None
    if got.get("type") not in ("AVRO", "PROTOCOL_BUFFER"):
        raise OptionError(f"schemaFrom=topic: topic {opts.topic} has a {got.get('type')} schema "
                          f"({got.get('schema')}); the sink encodes to AVRO and PROTOCOL_BUFFER schemas")
    enc = SinkSchema(type=got["type"], encoding=got["encoding"], definition=got["definition"],
                     revision_id=got["revision_id"], schema=got["schema"])
    opts = dataclasses.replace(opts, encode_schema=enc)
    # The publisher plans the encoding of a batch's columns before any
    # row: an empty batch of the input's schema checks every column with
    # the tasks' own code, here, before Spark starts them.
    arrow_schema = spark_to_arrow_schema(schema)
    empty = pa.RecordBatch.from_pylist([], schema=arrow_schema)
    try:
        with Publisher(opts.publisher_config()) as p:
            p.publish(empty)
    except PubSubError as e:
        raise OptionError(f"cannot write this input to {opts.topic} with schemaFrom=topic: {e.message}") from None
    return opts
