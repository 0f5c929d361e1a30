#!/usr/bin/env bash
# Installs everything the project needs on a fresh machine of this kind:
# the Python package (building the Go library and WASM decoders) with its
# test/bench extras. Needs Go, Python 3.10+, Java 17 and gcc on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in go python3 java gcc; do
  command -v "$tool" >/dev/null || { echo "setup: $tool is required but not on PATH" >&2; exit 1; }
done
echo "== setup: pip install .[test,bench] (builds libpubsubgo with $(go version | cut -d' ' -f3))"
python3 -m pip install --quiet --disable-pip-version-check ".[test,bench]" 2>&1 | grep -v "Running pip as the 'root' user" || true
python3 -c "import pubsub_go, pathlib; p = pathlib.Path(pubsub_go.__file__).parent / '_lib' / 'libpubsubgo.so'; assert p.exists(), p; print('== setup: installed', p)"
