"""Every documented option has a test that sets it and observes its effect
(tests/option_coverage.py), or a stated reason it has none yet: an option
added to the table without either fails here, and so does an entry that
names an option the table lacks or a test that does not exist. Test names
are read from the test files' syntax trees (no pytest run)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

import option_coverage
from pubsub_go.spark.option_table import SINK, SOURCE, table

REPO = Path(__file__).resolve().parent.parent
MAPS = {SOURCE: option_coverage.SOURCE, SINK: option_coverage.SINK}


def _documented(side: str) -> set[str]:
    return {o.name for o in table(side).options if o.doc_table}


def _tests_in(path: Path) -> set[str]:
    """The test functions pytest would collect from a file: module-level
    test_* functions and test_* methods of Test* classes."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names |= {f"{node.name}::{m.name}" for m in node.body
                      if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test_")}
    return names


def missing_node_ids(node_ids: set[str]) -> list[str]:
    """The node ids among node_ids that name no test."""
    found: dict[str, set[str]] = {}
    bad = []
    for nid in sorted(node_ids):
        path, _, name = nid.partition("::")
        file = REPO / path
        if not path.startswith("tests/") or not name or not file.is_file():
            bad.append(nid)
            continue
        if path not in found:
            found[path] = _tests_in(file)
        if name not in found[path]:
            bad.append(nid)
    return bad


def gaps(documented: set[str], mapped: dict[str, tuple[str, ...]], uncovered: dict[str, str]) -> list[str]:
    """What is wrong with one side's entries, one line each."""
    out = [f"{name}: documented, but neither mapped to a test nor listed in UNCOVERED"
           for name in sorted(documented - set(mapped) - set(uncovered))]
    out += [f"{name}: not a documented option" for name in sorted((set(mapped) | set(uncovered)) - documented)]
    out += [f"{name}: both mapped and listed in UNCOVERED" for name in sorted(set(mapped) & set(uncovered))]
    out += [f"{name}: mapped to no test" for name, nids in sorted(mapped.items()) if not nids]
    out += [f"{name}: in UNCOVERED without a reason" for name, why in sorted(uncovered.items()) if not why.strip()]
    return out


@pytest.mark.parametrize("side", [SOURCE, SINK])
def test_every_documented_option_has_a_test_or_a_reason(side):
    uncovered = option_coverage.UNCOVERED[side]
    wrong = gaps(_documented(side), MAPS[side], uncovered)
    assert not wrong, f"tests/option_coverage.py, {side}:\n" + "\n".join(wrong)
    if uncovered:  # reported in the run's warnings summary, so they stay in view
        warnings.warn(f"{len(uncovered)} documented {side} options have no test that observes them yet "
                      "(tests/option_coverage.py): " + "; ".join(f"{k} ({v})" for k, v in sorted(uncovered.items())),
                      stacklevel=1)


def test_every_mapped_test_exists():
    ids = {nid for m in MAPS.values() for nids in m.values() for nid in nids}
    assert not missing_node_ids(ids), f"tests/option_coverage.py names tests that do not exist: " \
                                      f"{missing_node_ids(ids)}"
    assert set(option_coverage.UNCOVERED) == {SOURCE, SINK}


def test_the_checks_find_each_kind_of_gap():
    """The checks above, against entries made wrong on purpose."""
    assert missing_node_ids({"tests/test_option_coverage.py::test_every_mapped_test_exists"}) == []
    assert missing_node_ids({"tests/test_option_coverage.py::test_no_such_test", "tests/no_such_file.py::test_x",
                             "tests/test_option_coverage.py", "tests/option_coverage.py::gaps"}) == [
        "tests/no_such_file.py::test_x", "tests/option_coverage.py::gaps", "tests/test_option_coverage.py",
        "tests/test_option_coverage.py::test_no_such_test"]
    t = ("tests/x.py::test_y",)
    assert gaps({"a", "b"}, {"a": t, "b": t}, {}) == []
    assert gaps({"a", "b", "c"}, {"a": t, "x": t, "b": ()}, {"b": "why", "d": " "}) == [
        "c: documented, but neither mapped to a test nor listed in UNCOVERED",
        "d: not a documented option", "x: not a documented option",
        "b: both mapped and listed in UNCOVERED", "b: mapped to no test", "d: in UNCOVERED without a reason"]
