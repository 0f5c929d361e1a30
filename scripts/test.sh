#!/usr/bin/env bash
# The whole test suite: set-up, Go (vet, tests, bounded fuzzing), lint, packaging, pytest
# (PySpark 4.3) in two lanes, and the compatibility matrix (scripts/compat.sh: PySpark 4.0-4.2,
# Python 3.10/3.13) after the JVM lane. Any failure fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
bash scripts/setup.sh

echo "== go vet + gofmt"
go vet ./...
unformatted=$(gofmt -l go bench wasm-decoders 2>/dev/null || true)
[ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; exit 1; }

echo "== go test -race (root module)"
# -race also turns on checkptr, which checks the library's unsafe pointer
# arithmetic (Arrow export, the publisher's buffers) as well as data races
# between the calls cffi and JNI make from many threads.
go test -race -count=1 -timeout 900s ./...
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

# pytest runs in two lanes at once (PUBSUB_GO_LANES=1: one, then the matrix):
# the suite mostly waits (leases, Spark start-ups, paced servers) and leaves a
# 2-core machine half idle, so
#  - the JVM lane runs the JVM front end's tests (tests/test_jvm_*.py and the
#    platform recipes: PySpark 3.5.7 and 4.3 applications with the jar), then
#    the compatibility matrix (scripts/compat.sh: tests/compat on the latest
#    PySpark 4.0.x, 4.1.x and 4.2.x with the same wheel, a Spark read + write on
#    Python 3.10 and 3.13; PUBSUB_GO_SKIP_COMPAT=1 skips it), in the background;
#  - the main lane runs every other test in the foreground.
# Each lane has its own emulators, Spark sessions, ports and Ivy directory
# (Ivy's cache is not safe for two processes resolving spark-avro at once); the
# JVM lane's log is printed after the main lane's. Given pytest arguments
# (`bash scripts/test.sh -k restart`), it runs the suite with them in one lane,
# without the matrix.
JVM_LANE_TESTS=(tests/test_jvm_*.py tests/test_platform_recipes.py)
lanes=${PUBSUB_GO_LANES:-2}
run_compat=0
if [ "${PUBSUB_GO_SKIP_COMPAT:-0}" != 1 ] && [ $# -eq 0 ]; then run_compat=1; fi
[ $# -eq 0 ] || lanes=1

suite() {  # suite [pytest args...]: pytest from /tmp, so the installed package (with its built
  # library) is tested, not the source tree; exit 5 (no test ran) is a failure
  local rc=0
  (cd /tmp && PUBSUB_GO_STRICT_SKIPS=1 python3 -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" -q \
      --timeout 900 --durations=25 -p no:cacheprovider "$@") || rc=$?
  if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; return 1; fi
  return "$rc"
}

jvm_lane() {
  local ivy
  ivy=$(mktemp -d "${TMPDIR:-/tmp}/pubsub-go-jvm-lane-ivy.XXXXXX")
  echo "== pytest, JVM lane: ${JVM_LANE_TESTS[*]}"
  PYSPARK_SUBMIT_ARGS="--conf spark.jars.ivy=$ivy pyspark-shell" suite "${JVM_LANE_TESTS[@]/#/$ROOT/}" \
    || { echo "the JVM lane's pytest failed" >&2; return 1; }
  rm -rf "$ivy"
  if [ "$run_compat" = 1 ]; then
    echo "== compat"
    bash scripts/compat.sh || { echo "the compatibility matrix (scripts/compat.sh) failed" >&2; return 1; }
  fi
}

if [ "$lanes" = 1 ]; then
  echo "== pytest"
  suite "$ROOT/tests" "$@"
  if [ "$run_compat" = 1 ]; then echo "== compat"; bash scripts/compat.sh; fi
  exit 0
fi

lane_log=$(mktemp "${TMPDIR:-/tmp}/pubsub-go-jvm-lane-log.XXXXXX")
# In a session of its own, so that stopping it stops its pytest and Spark too;
# an aborted run (a failed step, SIGINT, SIGTERM) leaves no lane running.
setsid bash -c "$(declare -p ROOT JVM_LANE_TESTS run_compat); $(declare -f suite jvm_lane); jvm_lane" \
  >"$lane_log" 2>&1 &
lane_pid=$!
trap 'kill -- "-$lane_pid" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo "== pytest, main lane (the JVM lane and the matrix run beside it; their log follows)"
main_rc=0
ignores=()
for f in "${JVM_LANE_TESTS[@]}"; do ignores+=("--ignore=$ROOT/$f"); done
suite "$ROOT/tests" "${ignores[@]}" || main_rc=$?
if [ "$main_rc" -ne 0 ]; then echo "the main lane's pytest failed (exit $main_rc)" >&2; fi
echo "== JVM lane (waiting for it: $(tail -c 300 "$lane_log" | tail -1))"
lane_rc=0
wait "$lane_pid" || lane_rc=$?
trap - EXIT
cat "$lane_log"
rm -f "$lane_log"
[ "$main_rc" -eq 0 ] || exit "$main_rc"
[ "$lane_rc" -eq 0 ] || { echo "the JVM lane failed (exit $lane_rc)" >&2; exit 1; }
