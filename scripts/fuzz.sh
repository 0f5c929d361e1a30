#!/usr/bin/env bash
# Bounded fuzzing of the built-in decoders' logic (native build of the same
# code the .wasm modules run), and the differential check that the native
# build (schema mode) and the .wasm build in wazero agree on every input.
# FUZZTIME=20s by default (per target).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
t="${FUZZTIME:-20s}"
cd "$root/wasm-decoders"
echo "== fuzz: FuzzJSONDecode ($t)"
go test ./jsondec -run '^$' -fuzz '^FuzzJSONDecode$' -fuzztime "$t"
echo "== fuzz: FuzzAvroDecode ($t)"
go test ./avrodec -run '^$' -fuzz '^FuzzAvroDecode$' -fuzztime "$t"
cd "$root"
echo "== fuzz: FuzzNativeVsWasm ($t): native and wazero give identical output and errors"
go test ./go/internal/decode -run '^$' -fuzz '^FuzzNativeVsWasm$' -fuzztime "$t"
