"""Records that fail to decode (schema mode): option onDecodeError picks
what happens to them -- fail the task (nacked, with the errors in the
message), publish them to deadLetterTopicId and ack them, or keep them with
the error in errorColumn -- and this module does it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ....client import Publisher, PublisherConfig, Subscriber
from ....schema import DECODE_ERROR_COLUMN
from ..options.schema_plan import SchemaPlan
from ..options.source import SourceOptions

DEAD_LETTER_ERROR_ATTRIBUTE = "pubsub_go_decode_error"
_ATTRIBUTE_MAX = 1024  # Pub/Sub's limit on an attribute value, in bytes


def handle_decode_errors(sub: Subscriber, opts: SourceOptions, plan: SchemaPlan, dlq: DeadLetters | None,
                         b: pa.RecordBatch, a: pa.Array) -> tuple[pa.RecordBatch, pa.Array, int]:
    """Applies onDecodeError to the rows that failed to decode: returns the
    rows to keep (and their ack ids) and how many were dead-lettered."""
    bad = error_rows(b)
    if bad is None or plan.decode.on_error == "column":
        return b, a, 0
    if plan.decode.on_error == "fail":
        msg = fail_message(b, bad, opts.subscription)
        sub.nack(a)
        raise DecodeFailedError(msg)
    assert dlq is not None
    dlq.publish(b, bad)  # returns once Pub/Sub has them
    sub.ack(a.filter(bad))
    good = pc.invert(bad)
    return b.filter(good), a.filter(good), int(pc.sum(bad).as_py() or 0)


class DecodeFailedError(RuntimeError):
    """onDecodeError=fail: a record failed to decode."""


class DeadLetters:
    """Publishes payloads that failed to decode to deadLetterTopicId."""

    def __init__(self, opts: SourceOptions, plan: SchemaPlan) -> None:
        self.opts, self.plan = opts, plan
        self._pub: Publisher | None = None

    def publish(self, batch: pa.RecordBatch, bad: pa.Array) -> None:
        if self._pub is None:
            self._pub = Publisher(PublisherConfig(topic=self.plan.decode.dead_letter_topic,
                                                  **self.opts.conn.client_kwargs()))
        out = dead_letter_batch(batch, bad, self.opts.subscription)
        self._pub.publish(out)
        self._pub.flush(timeout_ms=60_000)

    def close(self) -> None:
        if self._pub is not None:
            self._pub.close()


def error_rows(batch: pa.RecordBatch) -> pa.Array | None:
    """A boolean mask of the rows that failed to decode, or None if none did."""
    errs = batch.column(DECODE_ERROR_COLUMN)
    if errs.null_count == len(errs):
        return None
    return pc.is_valid(errs)


def fail_message(batch: pa.RecordBatch, bad: pa.Array, subscription: str) -> str:
    rows = batch.filter(bad)
    ids, errs = rows.column("message_id").to_pylist(), rows.column(DECODE_ERROR_COLUMN).to_pylist()
    shown = "; ".join(f"message_id {i}: {e}" for i, e in list(zip(ids, errs, strict=True))[:5])
    more = f" (and {len(ids) - 5} more)" if len(ids) > 5 else ""
    return (f"{len(ids)} message(s) of {subscription} failed to decode (onDecodeError=fail): {shown}{more}. "
            "They were nacked. Use onDecodeError=deadletter with deadLetterTopicId, or column with errorColumn, "
            "to keep the query running")


def _truncate_utf8(s: str, limit: int) -> str:
    b = s.encode()
    return s if len(b) <= limit else b[:limit].decode("utf-8", "ignore")


def dead_letter_batch(batch: pa.RecordBatch, bad: pa.Array, subscription: str) -> pa.RecordBatch:
    """The failed rows as a publishable batch: the original payload and
    attributes, plus the error, the source subscription and message id."""
    rows = batch.filter(bad)
    attrs = []
    for kv, err, mid in zip(rows.column("attributes").to_pylist(), rows.column(DECODE_ERROR_COLUMN).to_pylist(),
                            rows.column("message_id").to_pylist(), strict=True):
        d = dict(kv or [])
        d[DEAD_LETTER_ERROR_ATTRIBUTE] = _truncate_utf8(err, _ATTRIBUTE_MAX)
        d["pubsub_go_message_id"] = mid
        d["pubsub_go_subscription"] = subscription
        attrs.append(list(d.items()))
    return pa.RecordBatch.from_arrays(
        [rows.column("payload"), pa.array(attrs, type=pa.map_(pa.string(), pa.string()))],
        names=["payload", "attributes"])
