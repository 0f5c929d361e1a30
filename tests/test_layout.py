"""The package's layout rules (docs/architecture.md): the read layer by
side (spark/read has folders only: driver/, task/, options/, batchlog/), and
no Python module over 300 lines, so each stays one job a newcomer can read
whole. Reads the repository's files; no Spark, no native library."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "pubsub_go"
MAX_LINES = 300


def test_no_module_directly_under_spark_read():
    read = PACKAGE / "spark" / "read"
    loose = sorted(p.name for p in read.glob("*.py") if p.name != "__init__.py")
    assert loose == [], f"spark/read/ holds modules {loose}: put each in driver/, task/, options/ or batchlog/"


def test_no_module_over_the_line_limit():
    over = {str(p.relative_to(PACKAGE)): n for p in sorted(PACKAGE.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert over == {}, f"modules over {MAX_LINES} lines (split each by job): {over}"
