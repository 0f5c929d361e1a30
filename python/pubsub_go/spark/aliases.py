"""Option names users bring from other connectors (Databricks' `pubsub`
source, Spark's Kafka source and sink, Google's Pub/Sub Lite connector),
mapped to ours before any option is read, so a query moved here runs with
its options unchanged. The names, what they set, the notes and the refused
options are rows of the option table (option_table.py, _options.json),
which the JVM front end reads too; the converters are here, by the name
the table gives them. docs/source.md and docs/sink.md ("Option names from
other connectors") list them; tests/test_docs.py checks them.

Each alias means what our option means (`note` says where it differs);
options that mean nothing for Pub/Sub are refused with the reason, not as
unknown. An alias and our name (or two aliases of one option) given with
different values is an error naming both."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from . import option_table
from .connection_options import _credentials_json
from .optparse import OptionError

SECRET = {"credentialsjson"}  # targets whose values never appear in an error


@dataclass(frozen=True)
class Alias:
    name: str  # as the other connector spells it
    ours: str  # the option it sets
    origin: str
    note: str = ""  # how the meaning differs from the origin's; "" when it does not
    convert: Callable[[str], str] | None = None  # the origin's value -> ours


@dataclass(frozen=True)
class Refused:
    name: str  # an option name, or a prefix ending in "."
    origin: str
    why: str  # why it means nothing here, and what to use instead

    def matches(self, key: str) -> bool:
        n = self.name.lower()
        return key.startswith(n) if n.endswith(".") else key == n


def _lite_path(kind: str) -> Callable[[str], str]:
    """Pub/Sub Lite paths carry a location (projects/P/locations/L/<kind>s/X);
    Pub/Sub resources are global: the location is dropped."""
    def convert(raw: str) -> str:
        parts = raw.strip().split("/")
        if len(parts) == 6 and parts[0] == "projects" and parts[2] == "locations" and parts[4] == f"{kind}s":
            return f"projects/{parts[1]}/{kind}s/{parts[5]}"
        return raw
    return convert


def _base64_key(raw: str) -> str:
    """gcp.credentials.key: a credentials JSON, base64-encoded (as Pub/Sub
    Lite's connector takes it). Never quoted in an error: it is a secret."""
    try:
        text = base64.b64decode("".join(str(raw).split()), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise OptionError("option gcp.credentials.key is not valid base64; expected a credentials JSON file "
                          "encoded in base64 (e.g. base64 -w0 key.json), or give the JSON itself as "
                          "credentialsJson") from None
    return _credentials_json(text, "gcp.credentials.key (base64-decoded)")


CONVERTERS: dict[str, Callable[[str], str]] = {
    "lite_subscription_path": _lite_path("subscription"),
    "lite_topic_path": _lite_path("topic"),
    "base64_credentials": _base64_key,
}
# Databricks' service-credential fields: together they are a service-account key.
_CREDENTIAL_PARTS = "databricks_service_credential"


def _aliases(side: str) -> list[Alias]:
    out = []
    for o in option_table.table(side).options:
        for a in o.aliases:
            if a.origin != option_table.OWN and a.convert != _CREDENTIAL_PARTS:
                out.append(Alias(a.name, o.name, a.origin, a.note, CONVERTERS[a.convert] if a.convert else None))
    return out


DATABRICKS_CREDENTIALS = {a.name: str(a.part) for a in option_table.table(option_table.SOURCE)["credentialsJson"]
                          .aliases if a.convert == _CREDENTIAL_PARTS}
SOURCE_ALIASES = _aliases(option_table.SOURCE)
SINK_ALIASES = _aliases(option_table.SINK)
REFUSED = [Refused(r["name"], r["origin"], r["why"]) for r in option_table.refused()]


def _takes_credentials(aliases: list[Alias]) -> bool:
    """Whether these aliases are a side's, whose credentialsJson the Databricks fields may set."""
    return any(a.ours == "credentialsJson" for a in aliases)


def alias_names(aliases: list[Alias]) -> list[str]:
    """Every name the parser accepts besides ours (for "did you mean")."""
    names = [a.name for a in aliases]
    if _takes_credentials(aliases):
        names += list(DATABRICKS_CREDENTIALS)
    return names


def _databricks_key(opts: Mapping[str, str]) -> str | None:
    given = {k: str(opts[k.lower()]) if k == "privateKey" else str(opts[k.lower()]).strip()
             for k in DATABRICKS_CREDENTIALS if str(opts.get(k.lower()) or "").strip()}
    if not given:
        return None
    missing = [k for k in DATABRICKS_CREDENTIALS if k not in given]
    if missing:
        raise OptionError(f"options {', '.join(DATABRICKS_CREDENTIALS)} (Databricks' service credential) go "
                          f"together: {', '.join(missing)} missing (or give the key file's JSON as "
                          "credentialsJson)")
    doc = {field: given[k] for k, field in DATABRICKS_CREDENTIALS.items()}
    if "\n" not in doc["private_key"]:  # a key pasted on one line with its newlines escaped
        doc["private_key"] = doc["private_key"].replace("\\n", "\n")
    if not doc["private_key"].lstrip().startswith("-----BEGIN"):
        raise OptionError("option privateKey is not a PEM private key; expected the private_key of a "
                          "service-account key file (-----BEGIN PRIVATE KEY----- ...)")
    doc.update(type="service_account", token_uri="https://oauth2.googleapis.com/token")
    return json.dumps(doc)


class Resolved(dict):
    """The options under our names; given_as: our name (as documented) ->
    the alias the user wrote, so that an error about it names both."""

    given_as: dict[str, str]


def as_given(e: OptionError, opts: Mapping[str, str]) -> OptionError:
    """e, naming the alias the user wrote where it names our option set
    through one (and saying which option of ours that is)."""
    msg = str(e)
    for ours, alias in getattr(opts, "given_as", {}).items():
        if f"option {ours}" in msg:
            msg = msg.replace(f"option {ours}", f"option {alias}") + f" ({alias} sets our option {ours})"
    return OptionError(msg)


def resolve(options: Mapping[str, str], aliases: list[Alias], canonical: Mapping[str, str]) -> Resolved:
    """Lower-cased options with every alias replaced by our name; raises
    OptionError for refused options and for an alias that disagrees with
    another name of the same option. canonical: our names, lower-cased ->
    as documented (for the errors)."""
    opts = {str(k).lower(): v for k, v in options.items()}
    for key in opts:
        for r in REFUSED:
            if r.matches(key):
                raise OptionError(f"option {key} ({r.origin}) has no meaning for Pub/Sub: {r.why}")
    by_name = {a.name.lower(): a for a in aliases}
    given: dict[str, list[tuple[str, str]]] = {}  # our name (lower) -> [(given name, value)]
    out = Resolved()
    out.given_as = {}
    for key, value in opts.items():
        a = by_name.get(key)
        if a is None:
            if key in {k.lower() for k in DATABRICKS_CREDENTIALS} and _takes_credentials(aliases):
                continue
            out[key] = value
            given.setdefault(key, []).append((canonical.get(key, key), str(value)))
            continue
        v = a.convert(str(value)) if a.convert and str(value).strip() else str(value)
        given.setdefault(a.ours.lower(), []).append((a.name, v))
    if _takes_credentials(aliases):
        key = _databricks_key(opts)
        if key is not None:
            given.setdefault("credentialsjson", []).append(("clientEmail/clientId/privateKey/privateKeyId", key))
    for ours, names in given.items():
        values = {v.strip() for _, v in names}
        if len(values) > 1:
            shown = [n if ours in SECRET else f"{n}={v!r}" for n, v in names]
            raise OptionError(f"options {' and '.join(shown)} set the same option ({canonical.get(ours, ours)}) "
                              "with different values; set one")
        out[ours] = names[0][1]
        if names[0][0].lower() != ours:
            out.given_as[canonical.get(ours, ours)] = names[0][0]
    return out
