#!/usr/bin/env bash
# Bounded fuzzing of the built-in decoders' logic (native build of the same
# code the .wasm modules run), the differential check that the native
# build (schema mode) and the .wasm build in wazero agree on every input,
# and the differential check that a StreamingPull response parsed in its
# frames (wire.ParseSegments) decodes exactly as when joined (Parse).
#
# Each target runs a fixed number of executions, about 20 s on a 2-core
# machine (JSON 219k-296k, Avro 148k-264k, native-vs-wasm 97k-137k
# executions in 20 s, CI logs of 2026-11-24). Not a duration: Go 1.26's
# fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime's deadline races a worker (go.dev/issue/75804,
# fixed in Go 1.27; seen here on FuzzNativeVsWasm, no crasher written).
# FUZZTIME (e.g. 60s or 1000000x) overrides them all.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
json="${FUZZTIME:-200000x}"
avro="${FUZZTIME:-150000x}"
diff="${FUZZTIME:-100000x}"
diffwt="${FUZZTIME:-10000x}" # ~20 s: ~700 executions/s in wasmtime here (2026-11-27)
segs="${FUZZTIME:-300000x}" # ~15 s here (138k executions/s, 2026-11-24)
cd "$root/wasm-decoders"
echo "== fuzz: FuzzJSONDecode ($json)"
go test ./jsondec -run '^$' -fuzz '^FuzzJSONDecode$' -fuzztime "$json"
echo "== fuzz: FuzzAvroDecode ($avro)"
go test ./avrodec -run '^$' -fuzz '^FuzzAvroDecode$' -fuzztime "$avro"
cd "$root"
echo "== fuzz: FuzzNativeVsWasm ($diff): native and wazero give identical output and errors"
go test ./go/internal/decode -run '^$' -fuzz '^FuzzNativeVsWasm$' -fuzztime "$diff"
echo "== fuzz: FuzzNativeVsWasmtime ($diffwt): native and wasmtime give identical output and errors"
go test ./go/internal/decode -run '^$' -fuzz '^FuzzNativeVsWasmtime$' -fuzztime "$diffwt"
echo "== fuzz: FuzzParseSegments ($segs): a response cut anywhere parses as the whole"
go test ./go/internal/wire -run '^$' -fuzz '^FuzzParseSegments$' -fuzztime "$segs"
