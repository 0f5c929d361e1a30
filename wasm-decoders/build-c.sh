#!/usr/bin/env bash
# Builds a C decoder (decoder ABI 2, wasm-decoders/sdk-c) to a freestanding
# wasm32 module with zig's bundled clang (PyPI package ziglang; set ZIG to
# another `zig` command, or CC_WASM to a clang that targets wasm32).
# Usage: bash wasm-decoders/build-c.sh OUT.wasm [--no-sdk] decoder.c [more.c ...]
# (--no-sdk: the sources implement the ABI themselves, e.g. test guests.)
#        bash wasm-decoders/build-c.sh --native OUT decoder.c [more.c ...]
# builds the same sources for this machine with the same compiler and
# optimisation flags (benchmarks compare the two builds like with like).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
native=0
if [ "${1:-}" = "--native" ]; then
  native=1
  shift
fi
out="$1"
shift
sdk=("$here/sdk-c/pgdecoder.c")
if [ "${1:-}" = "--no-sdk" ]; then
  sdk=()
  shift
fi
read -r -a zig <<< "${ZIG:-python3 -m ziglang}"
# -flto: the SDK's append functions inline into the decoder's loop (a call
# costs more in wasm than natively). Measured in bench/results/decode_results.md.
opt=(-O2 -flto)
if [ "$native" = 1 ]; then
  exec "${zig[@]}" cc "${opt[@]}" -I "$here/sdk-c" "${sdk[@]}" "$@" -o "$out"
fi
if [ -n "${CC_WASM:-}" ]; then
  cc=($CC_WASM --target=wasm32)
else
  cc=("${zig[@]}" cc -target wasm32-freestanding)
fi
# -mbulk-memory: memcpy/memset become memory.copy/fill; no libc, no WASI.
"${cc[@]}" "${opt[@]}" -mbulk-memory -nostdlib -Wl,--no-entry -Wl,--strip-all \
  -I "$here/sdk-c" "${sdk[@]}" "$@" -o "$out"
