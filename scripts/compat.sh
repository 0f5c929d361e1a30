#!/usr/bin/env bash
# The compatibility matrix (docs/platforms.md), run by scripts/test.sh
# beside the full suite's main lane (the full suite runs on
# PySpark 4.3 and includes tests/compat):
#  1. the compatibility suite (tests/compat) on the latest patch of PySpark
#     4.0, 4.1 and 4.2, each in a fresh venv (Python 3.11) holding that
#     PySpark and the same pubsub-go wheel that scripts/setup.sh installed;
#     there `pip install <wheel>` and `pip install "<wheel>[spark]"` must
#     leave PySpark as it was;
#  2. a Spark read + write (part of the suite) on Python 3.10 and 3.13 (pyenv),
#     with the PySpark 4.3 the full suite ran on (pure Python: the venv finds
#     it through a .pth file, which saves installing 450 MB twice more).
# Each PySpark is downloaded once (an sdist of ~450 MB) and built into a wheel
# kept in $PUBSUB_GO_PYSPARK_CACHE, so a second run downloads nothing.
# PUBSUB_GO_SKIP_COMPAT=1 skips it all; PUBSUB_GO_COMPAT_SERIES="4.0 4.1" and
# PUBSUB_GO_COMPAT_PYTHONS="3.10" narrow it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CACHE=${PUBSUB_GO_PYSPARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pubsub-go/pyspark}
WORK=${PUBSUB_GO_COMPAT_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/pubsub-go-compat.XXXXXX")}
SERIES=${PUBSUB_GO_COMPAT_SERIES:-4.0 4.1 4.2}
PYTHONS=${PUBSUB_GO_COMPAT_PYTHONS:-3.10 3.13}
LATEST=4.3.0  # the full suite's PySpark (pyproject.toml's test extra)
mkdir -p "$CACHE"
step() { echo "== compat: $* ($(( SECONDS - t0 )) s)"; }
fail() { echo "compat FAILED: $*" >&2; exit 1; }
t0=$SECONDS

whl=$(bash scripts/setup.sh --print-wheel)
[ -f "$whl" ] || fail "no built wheel at $whl (scripts/setup.sh builds it)"
# What the tests need besides PySpark and the wheel (Connect: pandas, grpc, zstandard).
TEST_DEPS=("numpy>=1.22" "pandas>=2,<3" "pytest>=8" "pytest-timeout>=2.2" "google-cloud-pubsub>=2.30" "psutil>=5"
           "zstandard>=0.23" "grpcio-status>=1.67" "googleapis-common-protos>=1.65")

pyspark_wheel() {  # pyspark_wheel SPEC: the cached wheel of the newest PySpark matching SPEC
  local spec=$1 dl="$CACHE/sdist" out="$CACHE/wheels" sdist version
  mkdir -p "$dl" "$out"
  # pip download resolves the newest match, and reuses a file already in $dl.
  python3 -m pip download --quiet --no-deps --no-binary pyspark -d "$dl" "pyspark$spec" >&2
  sdist=$(python3 - "$dl" "$spec" <<'EOF'
import sys, pathlib
from packaging.specifiers import SpecifierSet
from packaging.version import Version
spec = SpecifierSet(sys.argv[2])
found = [(Version(p.name[len("pyspark-"):-len(".tar.gz")]), p) for p in pathlib.Path(sys.argv[1]).glob("pyspark-*.tar.gz")]
print(max((v, p) for v, p in found if v in spec)[1])
EOF
)
  version=$(basename "$sdist" .tar.gz); version=${version#pyspark-}
  if [ ! -f "$out/pyspark-$version-py2.py3-none-any.whl" ]; then
    python3 -m pip wheel --quiet --no-deps -w "$out" "$sdist" >&2
  fi
  echo "$out/pyspark-$version-py2.py3-none-any.whl"
}

# The suite: tests/compat, and of the full suite what is marked compat too (a
# query stopped and restarted in one application).
run_suite() {  # run_suite VENV LABEL [pytest args...]: the suite from /tmp, exit 5 (no tests) fails
  local venv=$1 label=$2; shift 2
  local t=$SECONDS rc=0
  # Its Spark resolves spark.jars.packages (spark-avro) into an Ivy directory
  # of its own: Ivy's cache is not safe for two processes at once, and the full
  # suite's main lane, running beside it, resolves the same package.
  local own_ivy=("PYSPARK_SUBMIT_ARGS=--conf spark.jars.ivy=$WORK/ivy pyspark-shell")
  (cd /tmp && env PUBSUB_GO_COMPAT=1 PUBSUB_GO_WHEEL="$whl" "${own_ivy[@]}" \
      "$venv/bin/python" -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" \
      "$ROOT/tests/compat" "$ROOT/tests/test_restart_in_one_app.py" -m compat -q --timeout 900 \
      -p no:cacheprovider "$@") || rc=$?
  [ "$rc" -ne 5 ] || fail "$label: pytest collected no tests"
  [ "$rc" -eq 0 ] || fail "$label: the compatibility suite failed (exit $rc)"
  step "$label: passed in $(( SECONDS - t )) s"
}

new_venv() {  # new_venv PYTHON DIR PYSPARK_WHEEL
  local py=$1 dir=$2 spark=$3
  "$py" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$spark" "${TEST_DEPS[@]}"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$whl"  # with its own dependencies
}

for series in $SERIES; do
  major=${series%%.*}; minor=${series#*.}
  spark=$(pyspark_wheel ">=$series,<$major.$(( minor + 1 ))")
  step "PySpark $(basename "$spark" | cut -d- -f2) (latest $series.x) ready"
  venv="$WORK/venv-spark$major$minor"
  new_venv python3 "$venv" "$spark"
  # The long kill and restart runs (marked compat_oldest) exercise the
  # source's offset path, of which there are two (spark/compat.py's
  # ADMISSION_CONTROL): the full suite runs the 4.2+ one on 4.3, the oldest
  # series here runs the 4.0/4.1 one; the other series run the rest.
  if [ "$series" = "${SERIES%% *}" ]; then
    run_suite "$venv" "PySpark $series on $(python3 --version)"
  else
    run_suite "$venv" "PySpark $series on $(python3 --version)" -m "compat and not compat_oldest"
  fi
done

# PySpark (and py4j) as python3 has them, for interpreters of other versions.
shared="$WORK/pyspark-shared"
mkdir -p "$shared"
for mod in pyspark py4j; do
  ln -sfn "$(python3 -c "import $mod, os; print(os.path.dirname($mod.__file__))")" "$shared/$mod"
done
have=$(python3 -c "import pyspark; print(pyspark.__version__)")
[ "$have" = "$LATEST" ] || fail "python3 has PySpark $have, expected $LATEST (scripts/setup.sh installs it)"

for pyv in $PYTHONS; do
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  py=$(ls -d "$root"/versions/"$pyv".*/bin/python3 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$py" ] && [ -x "$py" ] || fail "Python $pyv is not installed (pyenv install $pyv)"
  venv="$WORK/venv-py$pyv"
  "$py" -m venv "$venv"
  echo "$shared" > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/pyspark-shared.pth"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${TEST_DEPS[@]}" "$whl"
  # A Spark read (schema mode, drain job) and the sink's streaming and batch writes.
  run_suite "$venv" "Python $pyv, PySpark $LATEST" -k "schema_mode_json or streaming_and_batch_writes or importing"
done
step "done"
[ -n "${PUBSUB_GO_COMPAT_WORK:-}" ] || rm -rf "$WORK"
