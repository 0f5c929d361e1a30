"""The source's and the sink's options as one declarative table,
`pubsub_go/_options.json`, which the JVM front end reads too: names,
aliases, types, defaults (a literal, or the Go library's through
`_contract.json`), ranges, allowed values and the docs' cells. Python
takes the accepted names, the aliases, the defaults and the range checks
from here and restates none of them (tests/test_option_table.py checks);
docs/source.md and docs/sink.md's option tables are generated from it
(scripts/gen_option_docs.py).

"No limit" and "not set" have one form: a default of None (JSON null);
an absent max is no upper bound."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from .. import contract
from .durations import MS, SECONDS, duration_option
from .optparse import bool_option, int_option, text_option

SOURCE, SINK = "source", "sink"
OWN = "pubsub-go"  # the origin of an alias that is our own second spelling of an option
_UNSET: Any = object()


@dataclass(frozen=True)
class TableAlias:
    name: str  # as the user writes it
    origin: str  # OWN, or the connector the name comes from (Databricks, Kafka, Pub/Sub Lite)
    note: str  # how the meaning differs from the origin's; "" when it does not
    convert: str | None  # the name of the value converter (spark/aliases.py), None: taken as it is
    part: str | None  # convert "databricks_service_credential": the key file's field it fills


@dataclass(frozen=True)
class Option:
    name: str
    sides: tuple[str, ...]
    type: str  # bool, int, long, duration, string, enum, json
    unit: str | None  # durations: the unit of a plain integer, "ms" or "s"
    literal_default: Any  # None: not set (off, no limit, required or derived: default_doc says which)
    default_contract: str | None  # "struct.field": the Go library's default (contract.limit)
    literal_min: int | None
    literal_max: int | None
    range_contract: str | None  # "struct.field": min and max from the contract, unless min/max are given
    range_note: str  # appended to an out-of-range error
    literal_values: tuple[str, ...] | None
    values_contract: str | None  # a list of _contract.json (builtin_formats, publisher_compressions)
    requires: str | None  # what the option needs to mean anything: topicId, schema mode, format=protobuf, ...
    secret: bool
    aliases: tuple[TableAlias, ...]
    doc_table: str | None  # the docs' table that lists it ("options", "schema mode"); None: not listed
    default_doc: str
    doc: str

    def _limit(self) -> contract.Limit | None:
        key = self.range_contract or self.default_contract
        return contract.limit(*key.split(".", 1)) if key else None

    @property
    def default(self) -> Any:
        if self.default_contract:
            return contract.limit(*self.default_contract.split(".", 1)).default
        return self.literal_default

    @property
    def min(self) -> int | None:
        lim = self._limit() if self.range_contract else None
        return self.literal_min if self.literal_min is not None or lim is None else lim.min

    @property
    def max(self) -> int | None:
        lim = self._limit() if self.range_contract else None
        return self.literal_max if self.literal_max is not None or lim is None else lim.max

    @property
    def values(self) -> tuple[str, ...] | None:
        if self.values_contract:
            return tuple(contract._doc()[self.values_contract])
        return self.literal_values

    @property
    def own_aliases(self) -> list[str]:
        return [a.name for a in self.aliases if a.origin == OWN]


def _option(row: dict[str, Any]) -> Option:
    aliases = tuple(TableAlias(a["name"], a["origin"], a.get("note", ""), a.get("convert"), a.get("part"))
                    for a in row.get("aliases", []))
    values = row.get("values")
    return Option(row["name"], tuple(row["sides"]), row["type"], row.get("unit"), row.get("default"),
                  row.get("default_contract"), row.get("min"), row.get("max"), row.get("range_contract"),
                  row.get("range_note", ""), tuple(values) if values is not None else None,
                  row.get("values_contract"), row.get("requires"), bool(row.get("secret")), aliases,
                  row.get("doc_table"), row.get("default_doc", ""), row.get("doc", ""))


@cache
def document() -> dict[str, Any]:
    """The table as JSON (pubsub_go/_options.json)."""
    return dict(json.loads(resources.files("pubsub_go").joinpath("_options.json").read_text(encoding="utf-8")))


@cache
def table(side: str) -> Side:
    return Side(side)


class Side:
    """The options of one front end (SOURCE or SINK), in the table's order."""

    def __init__(self, side: str) -> None:
        if side not in (SOURCE, SINK):
            raise ValueError(f"no side {side!r}; expected {SOURCE} or {SINK}")
        self.side = side
        self.options = [o for o in map(_option, document()["options"]) if side in o.sides]
        self._by_name = {o.name.lower(): o for o in self.options}

    def __getitem__(self, name: str) -> Option:
        return self._by_name[name.lower()]

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._by_name

    def documented(self) -> list[str]:
        """Every name the side accepts as its own (each option, then its own
        second spelling), as documented: the list an unknown option's error gives."""
        return [n for o in self.options for n in (o.name, *o.own_aliases)]

    def canonical(self) -> dict[str, str]:
        """Lower-cased -> as documented (Spark lower-cases option keys)."""
        return {n.lower(): n for n in self.documented()}

    def requiring(self, *conditions: str) -> list[str]:
        """The options that mean something only under one of conditions."""
        return [o.name for o in self.options if o.requires in conditions]

    def default(self, name: str) -> Any:
        return self[name].default

    def bounds(self, name: str) -> tuple[int | None, int | None]:
        o = self[name]
        return o.min, o.max

    def value(self, opts: Mapping[str, str], name: str, default: Any = _UNSET, given_as: str | None = None) -> Any:
        """The option `name` of opts (lower-cased keys) as its type says,
        checked against the table's range; default: the table's unless
        the caller derives one (a default the table leaves to the code);
        given_as: the option's own second spelling the user wrote."""
        o = self[name]
        dflt = o.default if default is _UNSET else default
        key = given_as or o.name
        if o.type == "bool":
            return bool_option(opts, key, bool(dflt))
        lo = o.min if o.min is not None else 0
        if o.type in ("int", "long"):
            return int_option(opts, key, dflt, lo, o.max, o.range_note)
        if o.type == "duration":
            return duration_option(opts, key, dflt, lo, o.max, SECONDS if o.unit == "s" else MS, o.range_note)
        raise TypeError(f"option {o.name} is a {o.type}: read it as a string")


def text(opts: Mapping[str, str], name: str, strip: bool = True) -> str | None:
    """The option `name` of opts (lower-cased keys) as the user wrote it,
    stripped unless strip is False, or None when not given or blank (a
    number the library checks itself travels so). `name` must be an option
    of the table (either side, or one of its own second spellings), so a
    renamed option fails here instead of reading nothing."""
    if name.lower() not in _names():
        raise KeyError(f"{name} is no option of _options.json")
    return text_option(opts, name, strip)


@cache
def _names() -> frozenset[str]:
    return frozenset(n.lower() for row in document()["options"]
                     for n in (row["name"], *(a["name"] for a in row.get("aliases", []) if a["origin"] == OWN)))


def refused() -> list[dict[str, str]]:
    """Other connectors' options that mean nothing for Pub/Sub: name (or a
    prefix ending in "."), origin, why."""
    return [dict(r) for r in document()["refused"]]
