"""The option table (python/pubsub_go/_options.json, read by
spark/option_table.py here and by the JVM front end) is the one place an
option is named, defaulted and bounded: the docs' option tables are
generated from it and agree with it, its contract references resolve, and
no module of spark/ parses or reads an option by a literal name or
restates a default the table owns. No Spark session, no native library."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pubsub_go import contract, decode_api, schema
from pubsub_go.spark import aliases, option_table
from pubsub_go.spark.durations import parse_duration
from pubsub_go.spark.option_table import SINK, SOURCE, table
from pubsub_go.spark.read.options import source as source_options
from pubsub_go.spark.write import options as sink_options

REPO = Path(__file__).resolve().parent.parent
SPARK = Path(option_table.__file__).parent  # the installed package, as the other tests use it
TYPES = {"bool", "int", "long", "duration", "string", "enum", "json"}
FIELDS = {"name", "sides", "type", "unit", "default", "default_contract", "min", "max", "range_contract",
          "range_note", "values", "values_contract", "requires", "secret", "aliases", "doc_table", "default_doc",
          "doc", "jvm_refused"}


def _gen() -> Any:
    spec = importlib.util.spec_from_file_location("gen_option_docs", REPO / "scripts" / "gen_option_docs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_installed_table_is_the_repositorys():
    """The tests read the installed package: it must carry this tree's table."""
    assert option_table.document() == json.loads((REPO / "python" / "pubsub_go" / "_options.json").read_text())


def test_rows_are_well_formed():
    doc = option_table.document()
    assert set(doc["fields"]) == FIELDS, "_options.json's field descriptions and its rows' fields differ"
    for side in (SOURCE, SINK):
        names = [o.name.lower() for o in table(side).options]
        assert len(names) == len(set(names)), f"an option has two {side} rows"
        taken = set(names)
        for o in table(side).options:
            assert o.type in TYPES, o.name
            assert (o.type == "duration") == (o.unit in ("ms", "s")), f"{o.name}: a duration and only one has a unit"
            assert (o.type == "enum") == bool(o.values), f"{o.name}: an enum and only one has values"
            if o.default is not None and o.values:
                assert o.default in o.values, o.name
            if o.type in ("int", "long", "duration"):
                assert o.min is not None, f"{o.name}: a number needs a min (or range_contract)"
                if o.default is not None:
                    assert o.min <= o.default <= (o.max if o.max is not None else o.default), o.name
            for a in o.aliases:
                assert a.name.lower() not in taken, f"alias {a.name} of {o.name} is a {side} option or alias too"
                taken.add(a.name.lower())
                assert a.convert in (None, "databricks_service_credential", *aliases.CONVERTERS), a.name
    for row in doc["options"]:
        assert set(row) <= FIELDS, f"{row['name']}: fields {sorted(set(row) - FIELDS)} are not described"
        assert row["sides"] and set(row["sides"]) <= {SOURCE, SINK}, row["name"]


def test_contract_references_resolve():
    for side in (SOURCE, SINK):
        for o in table(side).options:
            for key in (o.default_contract, o.range_contract):
                if key:
                    contract.limit(*key.split(".", 1))  # raises if the contract has no such field
            if o.values_contract:
                assert o.values, o.name


def test_facts_the_table_shares_with_other_code():
    """Where another vocabulary holds the same fact, they agree."""
    src = table(SOURCE)
    assert src["decoderEngine"].values == decode_api.ENGINES and src.default("decoderEngine") == decode_api.ENGINES[0]
    assert src.default("errorColumn") == schema.DEFAULT_ERROR_COLUMN
    budget = src["maxWorkerMemoryBytes"]
    assert budget.max == src["maxBytesPerPartition"].max * source_options.FLOW_CONTROL_SHARE
    # The lease default is the shortest the library (and Pub/Sub) allows.
    assert src.default("ackDeadlineSeconds") == contract.limit("subscriber_config", "ack_deadline_seconds").min


def test_documented_is_the_tables():
    assert source_options.DOCUMENTED == table(SOURCE).documented()
    assert sink_options.DOCUMENTED == table(SINK).documented()


def test_docs_option_tables_are_generated_from_the_table():
    assert _gen().stale() == [], "run python3 scripts/gen_option_docs.py"


def _doc_rows(doc: str) -> dict[str, tuple[str, str]]:
    """option -> (default cell, meaning cell) of every option table of doc."""
    rows, in_options = {}, False
    for line in (REPO / "docs" / doc).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            in_options = False
        elif cells[0] == "option":
            in_options = True
        elif in_options and not set(cells[0]) <= set("-: "):
            names = re.findall(r"`(\w+)`", cells[0])
            rows[names[0]] = (cells[1], cells[2])
    return rows


@pytest.mark.parametrize("side,doc", [(SOURCE, "source.md"), (SINK, "sink.md")])
def test_docs_list_exactly_the_tables_options(side, doc):
    documented = set(_doc_rows(doc))
    listed = {o.name for o in table(side).options if o.doc_table}
    assert sorted(documented - listed) == [], f"in docs/{doc} but not in _options.json"
    assert sorted(listed - documented) == [], f"in _options.json but not in docs/{doc}"


def _doc_number(cell: str, o: option_table.Option) -> int | None:
    m = re.match(r"\s*(\d+(?:\.\d+)?\s*[a-z]*)", cell)
    if not m:
        return None
    number = int(re.match(r"\d+", m.group(1)).group(0))  # type: ignore[union-attr]
    if o.type == "duration":  # "15m"; a word after the number that is no unit is not part of it
        return parse_duration(m.group(1), o.unit or "ms") or number
    return number


def _doc_range(cell: str, o: option_table.Option) -> tuple[int, int] | None:
    m = re.search(r"(\d+)\.\.(\d+(?:\^\d+)?[a-z]*)", cell)
    if not m:
        return None
    hi = m.group(2)
    if "^" in hi:
        base, exp = hi.split("^")
        return int(m.group(1)), int(base) ** int(exp)
    return int(m.group(1)), (parse_duration(hi, o.unit or "ms") if o.type == "duration" else int(hi)) or 0


@pytest.mark.parametrize("side", [SOURCE, SINK])
def test_defaults_and_ranges_in_the_docs_are_the_tables(side):
    for o in table(side).options:
        if o.doc_table is None:
            continue
        if o.default is None:
            assert _doc_number(o.default_doc, o) is None, f"{o.name}: no default in the table, {o.default_doc!r}"
        elif o.type == "bool":
            assert o.default_doc == str(o.default).lower(), o.name
        elif o.type in ("int", "long", "duration"):
            assert _doc_number(o.default_doc, o) == o.default, f"{o.name}: default {o.default}, {o.default_doc!r}"
        else:
            assert o.default_doc == f"`{o.default}`", o.name
        rng = _doc_range(o.doc, o)
        if rng is not None:
            assert rng == (o.min, o.max), f"{o.name}: range {o.min}..{o.max}, docs say {rng}"


PARSERS = {"int_option", "duration_option", "bool_option", "text_option"}
# Keys read by name that are no option of the side reading them: the sink's
# "path" is Spark's save(path), which the sink refuses (the source's path is
# its own row).
NOT_OPTIONS = {"path"}
OWNED_LISTS = {"DOCUMENTED", "CANONICAL", "KNOWN", "OPTIONS", "CONNECTION_OPTIONS", "SCHEMA_MODE_ONLY", "CREATE_ONLY"}


def _restatements(source: str, names: set[str], defaults: set[object]) -> list[str]:
    """Where a module parses an option by a literal name, lists option names
    the table owns, or gives a DEFAULT_ constant a literal the table holds."""
    found = []
    lowered = {n.lower() for n in names} - NOT_OPTIONS
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            args = list(node.args[1:2]) + [k.value for k in node.keywords if k.arg == "name"]
            if fn in PARSERS and any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args):
                found.append(f"line {node.lineno}: {fn}() of a literal option name (use option_table)")
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            if (fn == "get" and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str) and node.args[0].value.lower() in lowered
                    and not (isinstance(receiver, ast.Name) and receiver.id.isupper())):
                found.append(f"line {node.lineno}: reads option {node.args[0].value!r} by its key "
                             "(use option_table.text or Side.value)")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
            if target in OWNED_LISTS and isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
                elts = value.keys if isinstance(value, ast.Dict) else value.elts
                if any(isinstance(e, ast.Constant) and e.value in names for e in elts):
                    found.append(f"line {node.lineno}: {target} lists option names (take them from option_table)")
            if target.startswith("DEFAULT_"):
                try:
                    literal = ast.literal_eval(value) if not isinstance(value, ast.BinOp) else eval(  # noqa: S307
                        compile(ast.Expression(value), "<const>", "eval"), {"__builtins__": {}})
                except Exception:
                    continue
                if not isinstance(literal, bool) and literal in defaults:
                    found.append(f"line {node.lineno}: {target} = {literal!r} restates an option table default")
    return found


def _owned() -> tuple[set[str], set[object]]:
    names, defaults = set(), set()
    for side in (SOURCE, SINK):
        for o in table(side).options:
            names |= {o.name, *o.own_aliases}
            if o.default is not None and not isinstance(o.default, bool):
                defaults.add(o.default)
    return names, defaults


def test_no_module_restates_what_the_table_owns():
    names, defaults = _owned()
    found = {}
    for path in sorted(SPARK.rglob("*.py")):
        if path.name == "option_table.py":
            continue
        if hits := _restatements(path.read_text(), names, defaults):
            found[str(path.relative_to(SPARK))] = hits
    assert found == {}, f"spark/ restates what _options.json owns: {found}"


def test_the_restatement_check_finds_each_kind():
    names, defaults = _owned()
    cases = {
        'x = int_option(opts, "batchSize", 4000, 1)': "literal option name",
        'x = duration_option(opts, name="lingerMs", default=5, lo=1)': "literal option name",
        'OPTIONS = ["startingTimestamp", "startingSnapshot"]': "lists option names",
        "DEFAULT_BATCH_SIZE = 4_000": "restates",
        "DEFAULT_WORKER_MEMORY = 256 << 20": "restates",
        'x = (opts.get("emulatorhost") or "").strip()': "by its key",
        'x = options.get("subscriptionId")': "by its key",
        'x = text_option(opts, "endpoint")': "literal option name",
    }
    for source, kind in cases.items():
        hits = _restatements(source, names, defaults)
        assert hits and kind in hits[0], f"{source!r} not found: {hits}"
    assert _restatements('DEFAULT_BATCH_SIZE = OPTIONS.default("batchSize")', names, defaults) == []
    assert _restatements('x = text(opts, "emulatorHost") or OPTIONS.get("x")', names, defaults) == []
