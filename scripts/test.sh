#!/usr/bin/env bash
# The whole test suite: set-up, Go (vet, tests, bounded fuzzing), lint, packaging, pytest
# (PySpark 4.3), then the compatibility matrix (scripts/compat.sh: PySpark 4.0-4.2, Python
# 3.10/3.13; PUBSUB_GO_COMPAT_BESIDE=1 runs it beside pytest). Any failure fails the run.
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

# The compatibility matrix: tests/compat on the latest PySpark 4.0.x, 4.1.x and
# 4.2.x with the same wheel, and a Spark read + write on Python 3.10 and 3.13
# (docs/platforms.md; PUBSUB_GO_SKIP_COMPAT=1 skips it), after pytest. It needs
# only the wheel setup.sh built and has its own venvs, emulators and ports, so
# PUBSUB_GO_COMPAT_BESIDE=1 runs it in the background beside pytest instead (its
# log printed after pytest's): ~10 minutes shorter when the cores are free, but
# on 2 cores it adds a busy core under pytest's kill and restart tests, so it is
# not the default until a run shows those hold beside it.
compat_pid="" compat_log=""
run_compat=0
if [ "${PUBSUB_GO_SKIP_COMPAT:-0}" != 1 ] && [ $# -eq 0 ]; then run_compat=1; fi
# In a session of its own, so that stopping it stops its pytest and Spark too.
stop_compat() { [ -z "$compat_pid" ] || kill -- "-$compat_pid" 2>/dev/null || true; }
if [ "$run_compat" = 1 ] && [ "${PUBSUB_GO_COMPAT_BESIDE:-0}" = 1 ]; then
  compat_log=$(mktemp "${TMPDIR:-/tmp}/pubsub-go-compat-log.XXXXXX")
  echo "== compat: started beside pytest (its log follows pytest's)"
  setsid bash scripts/compat.sh >"$compat_log" 2>&1 &
  compat_pid=$!
  # An aborted run (a failed step, SIGINT, SIGTERM) leaves no matrix running.
  trap stop_compat EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
fi

echo "== pytest"
# Run from /tmp so the installed package (with its built library) is tested,
# not the source tree. pytest exits 5 when it ran no test: that is a failure.
set +e
(cd /tmp && PUBSUB_GO_STRICT_SKIPS=1 python3 -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" "$ROOT/tests" -q --timeout 900 --durations=25 -p no:cacheprovider "$@")
rc=$?
set -e

compat_rc=0
if [ -n "$compat_pid" ]; then
  wait "$compat_pid" || compat_rc=$?
  compat_pid=""
  echo "== compat (ran beside pytest)"
  cat "$compat_log"
  rm -f "$compat_log"
fi
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
[ "$rc" -eq 0 ] || exit "$rc"
if [ "$compat_rc" -ne 0 ]; then echo "the compatibility matrix (scripts/compat.sh) failed (exit $compat_rc)" >&2; exit 1; fi
if [ "$run_compat" = 1 ] && [ "${PUBSUB_GO_COMPAT_BESIDE:-0}" != 1 ]; then
  echo "== compat"
  bash scripts/compat.sh
fi
