"""Columns the source derives from message attributes, beside the
`attributes` map: `attributeColumns` (named attributes as STRING columns of
their own) and `timestampAttribute` (an event-time TIMESTAMP column parsed
from an attribute, as Beam's PubsubIO.withTimestampAttribute reads it:
epoch milliseconds in decimal, or RFC 3339).

Built on the driver from the options (picklable), applied by each task to
the batches it pulls, before they are recorded in the batch log, so a
replayed batch carries the same values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from ...option_table import SOURCE, table, text
from ...optparse import OptionError

if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_TIMESTAMP_COLUMN = table(SOURCE).default("timestampColumn")
_NAME = re.compile(r"^[^\s,`]+$")


@dataclass(frozen=True)
class AttributeColumns:
    """The derived columns, in the order they follow the raw ones."""

    names: tuple[str, ...] = ()  # attributes promoted to STRING columns of the same name
    ts_attribute: str | None = None
    ts_column: str = DEFAULT_TIMESTAMP_COLUMN

    @staticmethod
    def parse(opts: Mapping[str, str], reserved: list[str]) -> AttributeColumns | None:
        """opts: lower-cased option names; reserved: the raw columns' names."""
        raw = (text(opts, "attributeColumns") or "")
        names = tuple(n.strip() for n in raw.split(",") if n.strip()) if raw else ()
        ts_attr = text(opts, "timestampAttribute")
        ts_col = (text(opts, "timestampColumn") or "")
        if ts_col and ts_attr is None:
            raise OptionError("option timestampColumn is set but timestampAttribute is not: set timestampAttribute "
                              "to the attribute the event time is parsed from")
        ts_col = ts_col or DEFAULT_TIMESTAMP_COLUMN
        if not names and ts_attr is None:
            return None
        columns = [*names, *([ts_col] if ts_attr else [])]
        for n in columns:
            if not _NAME.match(n):
                raise OptionError(f"option attributeColumns/timestampColumn: {n!r} is not a usable column name "
                                  "(no spaces, commas or backquotes); e.g. attributeColumns='source,region'")
        dupes = sorted({n for n in columns if columns.count(n) > 1})
        clash = sorted(set(columns) & set(reserved))
        if dupes or clash:
            raise OptionError(f"option attributeColumns/timestampColumn: column {(dupes or clash)[0]!r} "
                              f"{'is named twice' if dupes else 'is already a column filled from the message'}; "
                              f"the columns are {', '.join(reserved)} plus the derived ones")
        return AttributeColumns(names=names, ts_attribute=ts_attr, ts_column=ts_col)

    def spark_fields(self) -> list[StructField]:
        fields = [StructField(n, StringType(), True) for n in self.names]
        if self.ts_attribute:
            fields.append(StructField(self.ts_column, TimestampType(), True))
        return fields

    def extend(self, schema: StructType) -> StructType:
        return StructType([*schema.fields, *self.spark_fields()])

    def add(self, b: pa.RecordBatch) -> tuple[pa.RecordBatch, int]:
        """b with the derived columns appended, and how many rows got a null
        event time (the attribute missing or not a time)."""
        import pyarrow as pa

        attrs = b.column("attributes")
        cols, fields = list(b.columns), list(b.schema)
        for n in self.names:
            cols.append(_lookup(attrs, n))
            fields.append(pa.field(n, pa.string()))
        errors = 0
        if self.ts_attribute:
            ts = parse_event_times(_lookup(attrs, self.ts_attribute))
            errors = ts.null_count
            cols.append(ts)
            fields.append(pa.field(self.ts_column, ts.type))
        return pa.RecordBatch.from_arrays(cols, schema=pa.schema(fields)), errors


def _lookup(attrs: pa.Array, key: str) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    got = pc.map_lookup(attrs, pa.scalar(key, pa.string()), "first")
    return got.cast(pa.string()) if got.type != pa.string() else got


# Epoch milliseconds: what Beam writes (and reads) in a timestamp attribute.
_MILLIS = r"^-?[0-9]{1,15}$"


def parse_event_times(values: pa.Array) -> pa.Array:
    """Strings to timestamp[us, UTC]: epoch milliseconds, or RFC 3339 (a
    zone offset or Z required; fractions below a microsecond are cut). A
    null or a value of neither form gives null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out_type = pa.timestamp("us", tz="UTC")
    is_ms = pc.fill_null(pc.match_substring_regex(values, _MILLIS), False)
    ms = pc.if_else(is_ms, values, pa.scalar(None, pa.string())).cast(pa.int64())
    from_ms = pc.multiply(ms, 1000).cast(out_type)
    text = pc.if_else(is_ms, pa.scalar(None, pa.string()), values)
    try:
        from_text = _rfc3339(text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # some value is malformed: one by one
        from_text = pa.array([_one_rfc3339(v) for v in text.to_pylist()], out_type)
    return pc.if_else(is_ms, from_ms, from_text)


def _rfc3339(text: pa.Array) -> pa.Array:
    import pyarrow as pa

    # Through nanoseconds, so nine fraction digits parse too; then cut to µs.
    return text.cast(pa.timestamp("ns", tz="UTC")).cast(pa.timestamp("us", tz="UTC"), safe=False)


def _one_rfc3339(v: str | None) -> int | None:
    import pyarrow as pa

    if v is None:
        return None
    try:
        return _rfc3339(pa.array([v], pa.string()))[0].cast(pa.int64()).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
