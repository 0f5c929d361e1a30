#!/usr/bin/env bash
# Installs everything the project needs on a fresh machine of this kind:
# the Python package (building the Go library and WASM decoders) with its
# test/bench extras. Needs Go, Python 3.10+, Java 17 and gcc on PATH.
# The package is built once into a wheel ($PUBSUB_GO_WHEEL_DIR) and that wheel
# is installed: scripts/compat.sh installs the same file next to older PySparks
# (`bash scripts/setup.sh --print-wheel` prints its path).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEEL_DIR=${PUBSUB_GO_WHEEL_DIR:-${TMPDIR:-/tmp}/pubsub-go-wheel}
if [ "${1:-}" = "--print-wheel" ]; then
  ls "$WHEEL_DIR"/pubsub_go-*.whl 2>/dev/null | head -1
  exit 0
fi
for tool in go python3 java gcc; do
  command -v "$tool" >/dev/null || { echo "setup: $tool is required but not on PATH" >&2; exit 1; }
done
echo "== setup: pip wheel . (builds libpubsubgo with $(go version | cut -d' ' -f3)), then pip install it with [test,bench]"
rm -rf "$WHEEL_DIR"
python3 -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$WHEEL_DIR" . 2>&1 | grep -v "Running pip as the 'root' user" || true
whl=$(ls "$WHEEL_DIR"/pubsub_go-*.whl)
python3 -m pip install --quiet --disable-pip-version-check "$whl[test,bench]" 2>&1 | grep -v "Running pip as the 'root' user" || true
# The same version may be installed already: replace it with this build.
python3 -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$whl" 2>&1 | grep -v "Running pip as the 'root' user" || true
python3 -c "import pubsub_go, pathlib; p = pathlib.Path(pubsub_go.__file__).parent / '_lib' / 'libpubsubgo.so'; assert p.exists(), p; print('== setup: installed', p)"
