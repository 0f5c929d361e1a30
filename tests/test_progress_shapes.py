"""pubsub_go.progress.figures finds the source's figures wherever the
PySpark line puts them: sources[].latestOffset on 4.2+, the `progress` of
sources[].endOffset on 4.0/4.1 (docs/platforms.md), JSON text or dicts."""

from __future__ import annotations

import json

import pytest

from pubsub_go.progress import figures

REPORT = {"rows": 500, "taken": 500, "pendingAcks": 0, "acked": 500, "oldestUnackedAgeMs": 12,
          "backlogMessages": None}


def progress(source: dict) -> dict:
    return {"batchId": 3, "timestamp": "2026-11-28T12:00:00.000Z", "numInputRows": 500,
            "processedRowsPerSecond": 1000.0, "durationMs": {"triggerExecution": 500},
            "sources": [{"description": "other", "latestOffset": "7", "endOffset": "7"}, source]}


@pytest.mark.parametrize("as_text", [True, False])
@pytest.mark.parametrize("shape", ["4.2+", "4.0/4.1"])
def test_figures_are_read_from_where_each_line_puts_them(shape, as_text):
    offset = {"gen": "g", "batch": 3}
    if shape == "4.2+":
        source = {"latestOffset": {**offset, **REPORT}, "endOffset": offset}
    else:
        source = {"latestOffset": None, "endOffset": {**offset, "progress": REPORT}}
    if as_text:
        source = {k: json.dumps(v) if v is not None else None for k, v in source.items()}
    rows = figures([progress(source)])
    assert len(rows) == 1, rows
    assert rows[0]["rows"] == 500 and rows[0]["oldestUnackedAgeMs"] == 12 and rows[0]["backlogMessages"] is None
    assert rows[0]["triggerMs"] == 500


def test_a_query_without_a_pubsub_go_source_has_no_figures():
    assert figures([progress({"latestOffset": "{}", "endOffset": "{}"})]) == []
