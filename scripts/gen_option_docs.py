"""Writes the option tables of docs/source.md and docs/sink.md from the
option table, python/pubsub_go/_options.json: one row per option (with its
own second spelling, "(alias `x`)"), its default and meaning cells as the
table holds them. Edit the table, then run this; `--check` only says
whether the docs are up to date (tests/test_option_table.py runs it).

    python3 scripts/gen_option_docs.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "python" / "pubsub_go" / "_options.json"
# Each doc's option tables, in the order they appear in it, by doc_table.
DOCS = {"source": ("docs/source.md", ("options", "schema mode")), "sink": ("docs/sink.md", ("options",))}
HEADER = ["| option | default | meaning |", "|---|---|---|"]


def _rows(side: str, doc_table: str, table: dict[str, Any]) -> list[str]:
    out = []
    for o in table["options"]:
        if side not in o["sides"] or o.get("doc_table") != doc_table:
            continue
        own = [a["name"] for a in o.get("aliases", []) if a["origin"] == "pubsub-go"]
        name = f"`{o['name']}`" + "".join(f" (alias `{a}`)" for a in own)
        out.append(f"| {name} | {o['default_doc']} | {o['doc']} |")
    return out


def _is_option_table(line: str) -> bool:
    return line.startswith("|") and line.strip().strip("|").split("|")[0].strip() == "option"


def render(side: str, text: str, table: dict[str, Any]) -> str:
    """text (a doc's Markdown) with its option tables written from table."""
    tables = iter(DOCS[side][1])
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _is_option_table(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        doc_table = next(tables, None)
        if doc_table is None:
            raise SystemExit(f"{DOCS[side][0]} has more option tables than {DOCS[side][1]}")
        while i < len(lines) and lines[i].startswith("|"):
            i += 1
        out += [*HEADER, *_rows(side, doc_table, table)]
    if next(tables, None) is not None:
        raise SystemExit(f"{DOCS[side][0]} lacks an option table for {DOCS[side][1]}")
    return "\n".join(out)


def stale(table: dict[str, Any] | None = None) -> list[str]:
    """The docs whose option tables are not the table's; writes nothing."""
    table = table or json.loads(TABLE.read_text(encoding="utf-8"))
    return [path for side, (path, _) in DOCS.items()
            if render(side, (ROOT / path).read_text(encoding="utf-8"), table)
            != (ROOT / path).read_text(encoding="utf-8")]


def main(argv: list[str]) -> int:
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    if "--check" in argv:
        if bad := stale(table):
            print(f"option tables out of date in {', '.join(bad)}: run python3 scripts/gen_option_docs.py")
            return 1
        return 0
    for side, (path, _) in DOCS.items():
        doc = ROOT / path
        text = doc.read_text(encoding="utf-8")
        new = render(side, text, table)
        if new != text:
            doc.write_text(new, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
