#!/usr/bin/env bash
# Builds the built-in decoder modules (json.wasm, avro.wasm) with the local
# Go toolchain. Default output: python/pubsub_go/wasm/ (shipped in the
# wheel). Usage: bash wasm-decoders/build.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/../python/pubsub_go/wasm}"
for name in json avro; do
  bash "$here/build-guest.sh" "$out/$name.wasm" "cmd/$name"
done
echo "built $out/json.wasm $out/avro.wasm"
