#!/usr/bin/env bash
# Builds a C decoder (decoder ABI 2, wasm-decoders/sdk-c) to a freestanding
# wasm32 module with zig's bundled clang (PyPI package ziglang; set ZIG to
# another `zig` command, or CC_WASM to a clang that targets wasm32).
# Usage: bash wasm-decoders/build-c.sh OUT.wasm [--no-sdk] decoder.c [more.c ...]
# (--no-sdk: the sources implement the ABI themselves, e.g. test guests.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$1"
shift
sdk=("$here/sdk-c/pgdecoder.c")
if [ "${1:-}" = "--no-sdk" ]; then
  sdk=()
  shift
fi
if [ -n "${CC_WASM:-}" ]; then
  cc=($CC_WASM --target=wasm32)
else
  read -r -a zig <<< "${ZIG:-python3 -m ziglang}"
  cc=("${zig[@]}" cc -target wasm32-freestanding)
fi
# -mbulk-memory: memcpy/memset become memory.copy/fill; no libc, no WASI.
"${cc[@]}" -O2 -mbulk-memory -nostdlib -Wl,--no-entry -Wl,--strip-all \
  -I "$here/sdk-c" "${sdk[@]}" "$@" -o "$out"
