"""schemaFrom=topic: the Pub/Sub schema of the subscription's topic, read on
the driver (at load() to derive the columns, and at query start for the
tasks, which get it in their partitions: docs/source.md, "The topic's
schema"). The Go decoder then decodes each message by the revision and
encoding its attributes name (go/internal/decode/topicschema.go), with the
built-in decoder of the schema's type (Avro or protobuf), whatever the
DecodeOptions' format says."""

from __future__ import annotations

from typing import Any

from ....configs import TopicSchema
from ....errors import PubSubError
from ...optparse import OptionError
from ..options.source import SourceOptions


def fetch_topic_schema(opts: SourceOptions) -> TopicSchema:
    """The topic's schema: the pinned revision (schemaRevision) or the
    newest the topic accepts, and every revision's definition known now."""
    from ....client import admin

    assert opts.decode is not None and opts.decode.schema_from_topic
    where: dict[str, Any] = {"subscription": opts.subscription}
    if opts.setup is not None and opts.setup.topic:
        where = {"topic": opts.setup.topic}  # topicId: the subscription may not exist yet
    try:
        got = admin("get_topic_schema", revision=opts.decode.schema_revision, **where, **opts.conn.client_kwargs())
    except PubSubError as e:
        raise OptionError(f"schemaFrom=topic: cannot read the schema of {next(iter(where.values()))}: {e}") from None
    if got.get("type") not in ("AVRO", "PROTOCOL_BUFFER"):
        raise OptionError(f"schemaFrom=topic: topic {got.get('topic')} has a {got.get('type')} schema "
                          f"({got.get('schema')}); the source decodes AVRO and PROTOCOL_BUFFER schemas")
    return TopicSchema(schema=got["schema"], type=got["type"], revision_id=got["revision_id"],
                       revisions=dict(got.get("revisions") or {}))
