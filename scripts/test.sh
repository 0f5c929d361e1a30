#!/usr/bin/env bash
# The whole test suite: set-up, Go (vet, tests, bounded fuzzing), lint, packaging, pytest
# (PySpark 4.3), then the compatibility matrix (scripts/compat.sh: PySpark 4.0-4.2, Python 3.10/3.13).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
bash scripts/setup.sh

echo "== go vet + gofmt"
go vet ./...
unformatted=$(gofmt -l go bench wasm-decoders 2>/dev/null || true)
[ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; exit 1; }

echo "== go test (root module)"
go test -count=1 -timeout 600s ./...
if [ -f wasm-decoders/go.mod ]; then
  echo "== go test (wasm-decoders module)"
  (cd wasm-decoders && go vet ./... && go test -count=1 -timeout 600s ./...)
  if [ -x scripts/fuzz.sh ]; then bash scripts/fuzz.sh; fi
fi

echo "== JVM unit tests (jvm/test.sh: the bridge against the installed library)"
bash jvm/test.sh --lib "$(python3 -c 'import pubsub_go, pathlib; print(pathlib.Path(pubsub_go.__file__).parent / "_lib" / "libpubsubgo.so")')"

echo "== ruff"
python3 -m ruff check python tests bench testdata

# Release artifacts: both manylinux wheels and the sdist, each installed in a
# fresh venv without go on PATH (a few minutes; PUBSUB_GO_SKIP_PACKAGING=1 skips).
if [ "${PUBSUB_GO_SKIP_PACKAGING:-0}" != 1 ]; then bash scripts/packaging-check.sh; fi

echo "== pytest"
# Run from /tmp so the installed package (with its built library) is tested,
# not the source tree. pytest exits 5 when it ran no test: that is a failure.
set +e
(cd /tmp && PUBSUB_GO_STRICT_SKIPS=1 python3 -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" "$ROOT/tests" -q --timeout 900 --durations=25 -p no:cacheprovider "$@")
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
[ "$rc" -eq 0 ] || exit "$rc"

# The compatibility matrix: tests/compat on the latest PySpark 4.0.x, 4.1.x and
# 4.2.x with the same wheel, and a Spark read + write on Python 3.10 and 3.13
# (docs/platforms.md; PUBSUB_GO_SKIP_COMPAT=1 skips it).
if [ "${PUBSUB_GO_SKIP_COMPAT:-0}" != 1 ] && [ $# -eq 0 ]; then
  echo "== compat"
  bash scripts/compat.sh
fi
