"""The docs stay true to the tree: every repository path README.md,
RATIONALE.md and docs/*.md name in backticks or link to exists, the
README's layout table names every Go package, and the option tables of
docs/source.md and docs/sink.md list exactly the options the code accepts,
with the defaults and ranges the code applies. Reads files and parses
options only: no Spark session, no native library."""

from __future__ import annotations

import re
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from pubsub_go.spark.aliases import DATABRICKS_CREDENTIALS, SINK_ALIASES, SOURCE_ALIASES
from pubsub_go.spark.durations import UNITS, parse_duration
from pubsub_go.spark.optparse import OptionError
from pubsub_go.spark.read.options.source import DOCUMENTED as SOURCE_OPTIONS
from pubsub_go.spark.read.options.source import SourceOptions
from pubsub_go.spark.write.options import DOCUMENTED as SINK_OPTIONS
from pubsub_go.spark.write.options import SinkOptions

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "RATIONALE.md", *sorted((ROOT / "docs").glob("*.md"))]

# Where the docs name files by a shorter path: the Python package
# (`spark/read/task/run.py`, `pubsub_go/schema.py`), the decoders' module
# (`examples/vpcflow/...`), a Go package (`codec.go` next to its package).
BASES = ["", "python/", "python/pubsub_go/", "wasm-decoders/", "jvm/src/main/java/io/pubsubgo/spark/"]
# Build outputs the docs name, which a clean checkout does not hold (.gitignore).
GENERATED = {"dist/", "python/pubsub_go/wasm/", "pubsub_go/_jars/pubsub-go-spark.jar"}
_FILE_EXT = re.compile(r"\.(py|go|c|h|md|sh|json|toml|txt)$")
# Resource names, URIs, placeholders, calls, time zones (Europe/Oslo): not paths.
_NOT_A_PATH = re.compile(r"[\s<>=*|\"'(),:]|^(projects|roles|subscription|runtime)/|^[~$/.-]|^[a-z]+\("
                         r"|^[A-Z][a-z]+/[A-Z][a-z]+$")


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    except (OSError, subprocess.CalledProcessError):  # an unpacked sdist: walk the tree instead
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]


TRACKED = _tracked()
BASENAMES = {p.rsplit("/", 1)[-1] for p in TRACKED}
DIRS = {p.rsplit("/", i)[0] for p in TRACKED for i in range(1, p.count("/") + 1)}


def _prose(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _expand(token: str) -> list[str]:
    """go/internal/{a,b} -> go/internal/a, go/internal/b."""
    m = re.search(r"\{([^{}]+)\}", token)
    if not m:
        return [token]
    return [x for alt in m.group(1).split(",") for x in _expand(token[:m.start()] + alt + token[m.end():])]


def _mentioned_paths() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for token in re.findall(r"`([^`\n]+)`", _prose(doc.read_text())):
            token = token.strip()
            if token.startswith(("bash ", "python ")):  # a command: its script argument
                token = token.split()[1]
            for t in _expand(token):
                if _NOT_A_PATH.search(t) or not ("/" in t or _FILE_EXT.search(t)):
                    continue
                out.append((doc.name, t))
    return out


def _exists(path: str) -> bool:
    if path in GENERATED:
        return True
    if "/" not in path.rstrip("/"):
        return path.rstrip("/") in BASENAMES or path.rstrip("/") in {d.rsplit("/", 1)[-1] for d in DIRS}
    p = path.rstrip("/")
    return any(base + p in DIRS or base + p in TRACKED for base in BASES)


def test_the_docs_name_paths_at_all():
    # Guards the extraction itself: an empty list would pass everything.
    named = {t for _, t in _mentioned_paths()}
    assert {"go/internal/wire", "spark/read/task/run.py", "go/include/pubsubgo.h", "scripts/test.sh"} <= named


@pytest.mark.parametrize("doc,path", _mentioned_paths())
def test_every_backticked_path_exists(doc, path):
    assert _exists(path), f"{doc} names `{path}`, which is not in the tree"


def _links() -> list[tuple[Path, str]]:
    out = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", _prose(doc.read_text())):
            if not re.match(r"[a-z]+://|#", target):
                out.append((doc, target.split("#", 1)[0]))
    return out


@pytest.mark.parametrize("doc,target", _links(), ids=lambda v: v.name if isinstance(v, Path) else v)
def test_every_relative_link_resolves(doc, target):
    assert (doc.parent / target).exists(), f"{doc.name} links to {target}, which does not exist"


def _layout_names() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    return {p.rstrip("/") for t in re.findall(r"`([^`]+)`", layout) for p in _expand(t)}


def test_readme_layout_names_every_go_package():
    named = _layout_names()
    packages = sorted({p.rsplit("/", 1)[0] for p in TRACKED if p.endswith(".go") and p.startswith("go/")})
    missing = [p for p in packages if p not in named]
    assert missing == [], f"README's layout table does not name {missing}"


def test_readme_layout_names_every_top_level_directory():
    named = _layout_names()
    # docs/ has its own section in the README.
    tops = sorted({p.split("/", 1)[0] for p in TRACKED if "/" in p} - {"docs"})
    missing = [d for d in tops if not any(n == d or n.startswith(d + "/") for n in named)]
    assert missing == [], f"README's layout table does not name {missing}"


def _tables(doc: str, header: str) -> list[list[str]]:
    """The rows (as cells) of every table of doc whose first header cell is `header`."""
    rows, current = [], None
    for line in (ROOT / "docs" / doc).read_text().splitlines():
        if not line.strip().startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is None:
            current = cells[0]
        elif current == header and not set(cells[0]) <= set("-: "):  # not the |---| line
            rows.append(cells)
    return rows


def _option_table(doc: str) -> dict[str, str]:
    """option name -> its row's default and meaning cells, from every options table of doc."""
    rows = {}
    for cells in _tables(doc, "option"):
        if not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`(\w+)`", cells[0]):
            rows[name] = " | ".join(cells[1:])
    return rows


SOURCE_TABLE = _option_table("source.md")
SINK_TABLE = _option_table("sink.md")
# Accepted by the source but not an option of its own: load(path) is ignored.
UNDOCUMENTED_SOURCE = {"path"}


def test_source_options_table_lists_exactly_the_accepted_options():
    accepted = set(SOURCE_OPTIONS) - UNDOCUMENTED_SOURCE
    assert sorted(accepted - set(SOURCE_TABLE)) == [], "accepted but not in docs/source.md"
    assert sorted(set(SOURCE_TABLE) - accepted) == [], "in docs/source.md but not accepted"


# The sink's input columns share its tables' form (docs/sink.md, Input columns).
SINK_COLUMNS = {"payload", "attributes", "ordering_key", "topic", "event_time"}


def _alias_table(doc: str) -> dict[str, str]:
    """alias -> the option it sets, from the alias tables of doc."""
    return {name: cells[2].strip("`") for cells in _tables(doc, "alias")
            for name in re.findall(r"`([\w.]+)`", cells[0])}


@pytest.mark.parametrize("doc,aliases", [("source.md", SOURCE_ALIASES), ("sink.md", SINK_ALIASES)])
def test_alias_tables_list_exactly_the_accepted_aliases(doc, aliases):
    documented = _alias_table(doc)
    accepted = {a.name: a.ours for a in aliases}
    accepted.update({n: "credentialsJson" for n in DATABRICKS_CREDENTIALS})
    assert documented == accepted, f"docs/{doc}'s alias table and spark/aliases.py differ"
    notes = {a.name: a.note or "–" for a in aliases}
    for cells in _tables(doc, "alias"):
        name = re.findall(r"`([\w.]+)`", cells[0])[0]
        if name in notes:
            assert cells[3] == notes[name], f"docs/{doc}: the note of {name} is not spark/aliases.py's"


def test_duration_table_lists_exactly_the_parser_units():
    documented = {name: row[0] for row in _tables("source.md", "unit") for name in re.findall(r"`(\w+)`", row[1])}
    assert set(documented) == set(UNITS), "docs/source.md's Durations table and spark/durations.py differ"
    per_unit = {"microseconds": Fraction(1, 1000), "milliseconds": 1, "seconds": 1000, "minutes": 60_000,
                "hours": 3_600_000, "days": 86_400_000}
    for name, unit in documented.items():
        assert UNITS[name] == per_unit[unit], f"{name} is documented as {unit}"
        # What the docs promise, through the parser itself.
        assert parse_duration(f"2000 {name}", "ms") == 2000 * per_unit[unit]


def test_sink_options_table_lists_exactly_the_accepted_options():
    assert sorted(set(SINK_OPTIONS) - set(SINK_TABLE)) == [], "accepted but not in docs/sink.md"
    assert sorted(set(SINK_TABLE) - set(SINK_OPTIONS) - SINK_COLUMNS) == [], \
        "in docs/sink.md but not accepted"


_SOURCE_BASE = {"subscriptionId": "projects/p/subscriptions/s", "emulatorHost": "127.0.0.1:1"}
_DECODE = {"format": "json"}
# Option -> (the parsed field it sets, extra options it needs). The expected
# values come from the docs' tables, the actual ones from parsing.
SOURCE_FIELDS = {
    "streamsPerPartition": ("streams_per_partition", {}),
    "batchSize": ("batch_size", {}),
    "maxWaitTimeMs": ("max_wait_ms", {}),
    "quietPeriodMs": ("quiet_period_ms", {}),
    "maxBatchDurationMs": ("max_batch_duration_ms", {}),
    "maxRecordsPerPartition": ("max_records_per_partition", {}),
    "maxBytesPerPartition": ("max_bytes_per_partition", {}),
    "ackDeadlineSeconds": ("ack_deadline_seconds", {}),
    "commitLeaseSeconds": ("commit_lease_seconds", {}),
    "decoderTimeoutMs": ("decode.timeout_ms", _DECODE),
    "decoderMemoryLimitMB": ("decode.memory_limit_mb", _DECODE),
}
SINK_FIELDS = {
    "batchMaxMessages": "batch_max_messages",
    "batchMaxBytes": "batch_max_bytes",
    "lingerMs": "linger_ms",
    "maxInFlightBytes": "max_in_flight_bytes",
    "retryTimeoutMs": "retry_timeout_ms",
    "publishTimeoutMs": "publish_timeout_ms",
    "publisherIdleMs": "publisher_idle_ms",
    "compressionBytesThreshold": "compression_bytes_threshold",
}


def _get(obj: object, dotted: str) -> object:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _doc_default(row: str) -> int:
    """The documented default: a leading number, or a derived default's
    figure given in parentheses, e.g. "`maxWorkerMemoryBytes` / 4 (64 MiB)"."""
    if m := re.match(r"\s*(\d+)", row):
        return int(m.group(1))
    m = re.match(r"[^|]*?\((\d+) MiB\)", row)
    assert m, f"no default figure in {row!r}"
    return int(m.group(1)) << 20


def _doc_range(row: str) -> tuple[int, int] | None:
    m = re.search(r"(\d+)\.\.(\d+(?:\^\d+)?)", row)
    if not m:
        return None
    hi = m.group(2)
    return int(m.group(1)), (int(hi.split("^")[0]) ** int(hi.split("^")[1]) if "^" in hi else int(hi))


@pytest.mark.parametrize("option", sorted(SOURCE_FIELDS))
def test_source_default_and_range_as_documented(option, monkeypatch):
    monkeypatch.delenv("PUBSUB_GO_SPARK_MASTER", raising=False)
    field, extra = SOURCE_FIELDS[option]
    row = SOURCE_TABLE[option]
    parsed = SourceOptions.parse({**_SOURCE_BASE, **extra})
    assert _get(parsed, field) == _doc_default(row), f"docs/source.md: {option} default {row!r}"
    rng = _doc_range(row)
    if rng is not None:
        lo, hi = rng
        for ok in (lo, hi):
            assert _get(SourceOptions.parse({**_SOURCE_BASE, **extra, option: str(ok)}), field) == ok
        for bad in (lo - 1, hi + 1):
            with pytest.raises(OptionError, match=option):
                SourceOptions.parse({**_SOURCE_BASE, **extra, option: str(bad)})


@pytest.mark.parametrize("option", sorted(SINK_FIELDS))
def test_sink_default_and_range_as_documented(option):
    field = SINK_FIELDS[option]
    row = SINK_TABLE[option]
    base = {"topicId": "projects/p/topics/t", "emulatorHost": "127.0.0.1:1"}
    assert getattr(SinkOptions.parse(base), field) == _doc_default(row), f"docs/sink.md: {option} {row!r}"
    rng = _doc_range(row)
    if rng is not None:
        lo, hi = rng
        assert getattr(SinkOptions.parse({**base, option: str(hi)}), field) == hi
        for bad in (lo - 1, hi + 1):
            with pytest.raises(OptionError, match=option):
                SinkOptions.parse({**base, option: str(bad)})
