"""The column contract between Python and the Go data plane, in one place.

RAW_SCHEMA is the Arrow schema of the batches Go builds from Pub/Sub
messages (go/internal/rawbatch.Schema); the Spark layer derives its Spark
schema from it. The three error columns each have one name here:

- DECODE_ERROR_COLUMN: the column the Go subscriber adds beside the decoded
  columns, null where a row decoded (go/internal/decode.DecodeErrorColumn);
- MODULE_ERROR_COLUMN: the last column of a WASM decoder module's output
  batch (the module ABI, go/internal/decode.ErrorColumn);
- DEFAULT_ERROR_COLUMN: the user-facing column of onDecodeError=column when
  option errorColumn is not set.

Importing this loads pyarrow only (no Spark, no Go library).
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["DECODE_ERROR_COLUMN", "DEFAULT_ERROR_COLUMN", "MODULE_ERROR_COLUMN", "RAW_SCHEMA"]

RAW_SCHEMA = pa.schema([
    pa.field("message_id", pa.string()),
    pa.field("publish_time", pa.timestamp("us", tz="UTC")),
    pa.field("attributes", pa.map_(pa.string(), pa.string())),
    pa.field("payload", pa.binary()),
    pa.field("ordering_key", pa.string()),
    pa.field("delivery_attempt", pa.int32()),
])

DECODE_ERROR_COLUMN = "__decode_error"
MODULE_ERROR_COLUMN = "__error"
DEFAULT_ERROR_COLUMN = "_decode_error"
