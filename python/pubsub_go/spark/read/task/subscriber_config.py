"""Source options -> the Go subscriber's configuration, in one place: the
tasks' pulling subscribers and the driver's acker are all built here. The
only place where the source's "none" (None) becomes the library's 0."""

from __future__ import annotations

from ....client import SubscriberConfig
from ..options.schema_plan import SchemaPlan
from ..options.source import SourceOptions
from .partition import PubSubPartition


def subscriber_config(opts: SourceOptions, pull: bool = True, plan: SchemaPlan | None = None,
                      part: PubSubPartition | None = None) -> SubscriberConfig:
    return SubscriberConfig(
        subscription=opts.subscription,
        **opts.conn.client_kwargs(),
        streams=opts.streams_per_partition,
        catch_up_streams=opts.catch_up_streams_per_partition,
        max_outstanding_messages=_flow_control_messages(opts, part),
        max_outstanding_bytes=opts.max_bytes_per_partition,
        batch_size=opts.batch_size,
        max_wait_ms=opts.max_wait_ms,
        ack_deadline_seconds=opts.ack_deadline_seconds,
        arrival_cutoff_us=(part.cutoff_us or 0) if part else 0,
        no_pull=not pull,
        decoder=plan.decoder_config(part.topic_schema if part else None) if pull and plan is not None else None,
    )


def _flow_control_messages(opts: SourceOptions, part: PubSubPartition | None) -> int:
    """Handed-out messages stay outstanding until the task ends, so flow
    control is sized to what the task may hand out, plus one batch ahead."""
    if opts.max_outstanding_messages is not None:
        return opts.max_outstanding_messages
    if part is None:
        return max(2 * opts.batch_size, 1000)
    return min(part.max_rows, 1_000_000) + opts.batch_size
