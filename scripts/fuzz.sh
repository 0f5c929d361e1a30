#!/usr/bin/env bash
# Bounded fuzzing of the built-in decoders' logic (native build of the same
# code the .wasm modules run). FUZZTIME=20s by default.
set -euo pipefail
cd "$(dirname "$0")/../wasm-decoders"
t="${FUZZTIME:-20s}"
echo "== fuzz: FuzzJSONDecode ($t)"
go test ./jsondec -run '^$' -fuzz '^FuzzJSONDecode$' -fuzztime "$t"
echo "== fuzz: FuzzAvroDecode ($t)"
go test ./avrodec -run '^$' -fuzz '^FuzzAvroDecode$' -fuzztime "$t"
