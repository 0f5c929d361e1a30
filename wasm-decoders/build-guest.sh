#!/usr/bin/env bash
# Builds one decoder module, whatever its language: the one builder the Go
# and Python tests (and the benchmarks) use for their guests.
# Usage: bash wasm-decoders/build-guest.sh OUT.wasm SRC
# SRC is a path under wasm-decoders: a Go package (cmd/json,
# examples/vpcflow, internal/testguests/hostile), built for wasip1 as the
# shipped modules are; or a C file (examples/vpcflow-c/vpcflow.c), built by
# build-c.sh with the C SDK, or without it when the file implements the
# ABI itself (it does not include pgdecoder.h).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$1"
src="$2"
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
case "$src" in
*.c)
  sdk=()
  grep -q '#include "pgdecoder.h"' "$here/$src" || sdk=(--no-sdk)
  exec bash "$here/build-c.sh" "$out" "${sdk[@]}" "$here/$src"
  ;;
*)
  cd "$here"
  GOOS=wasip1 GOARCH=wasm exec go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o "$out" "./$src"
  ;;
esac
