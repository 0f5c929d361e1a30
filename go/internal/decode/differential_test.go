package decode

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/testlib"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/wasmtime"
)

// FuzzNativeVsWasm: the built-in decoders compiled natively (schema mode)
// and as .wasm in wazero give identical batches and row errors, for any
// payload, under every conformance vector's schema and options (which
// together cover every supported type). Seeds: the vectors' payloads. A
// bounded run is part of scripts/fuzz.sh.
func FuzzNativeVsWasm(f *testing.F) { fuzzNativeVs(f, DecoderConfig{}) }

// FuzzNativeVsWasmtime: the same against the .wasm in the wasmtime engine.
func FuzzNativeVsWasmtime(f *testing.F) {
	lib := testlib.NeedWasmtime(f)
	fuzzNativeVs(f, DecoderConfig{Engine: wasmtime.Name, WasmtimeLibrary: lib})
}

// fuzzNativeVs compares the built-ins natively with their .wasm run by
// engine's Engine.
func fuzzNativeVs(f *testing.F, engine DecoderConfig) {
	files, err := filepath.Glob("../../../testdata/decoders/vectors/*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("no vectors: %v", err)
	}
	type pair struct{ wasm, native *Decoder }
	var pairs []pair
	mem := mallocator.NewMallocator()
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var v vector
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			f.Fatal(err)
		}
		spec := DecoderConfig{Format: v.Format, Options: v.Options, TimeoutMs: 60_000}
		if v.Schema != nil {
			spec.Target = schemaOf(f, v.Schema)
		}
		ws, ns := spec, spec
		ws.Wasm = wasmFor(f, v.Format) // ns, without a module, runs the built-in decoder
		ws.Engine, ws.WasmtimeLibrary = engine.Engine, engine.WasmtimeLibrary
		w, err := NewDecoder(context.Background(), ws, mem)
		if err != nil {
			f.Fatal(err)
		}
		n, err := NewDecoder(context.Background(), ns, mem)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { w.Close(); n.Close() })
		idx := byte(len(pairs))
		pairs = append(pairs, pair{w, n})
		for _, p := range v.Payloads {
			f.Add(idx, []byte(p))
		}
		for _, h := range v.PayloadsHex {
			p, _ := hex.DecodeString(h)
			f.Add(idx, p)
		}
	}
	f.Fuzz(func(t *testing.T, which byte, payload []byte) {
		p := pairs[int(which)%len(pairs)]
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		// The payload alone, then split at its middle: rows must not disturb each other.
		b.Append(payload)
		b.Append(payload[:len(payload)/2])
		b.AppendNull()
		b.Append(payload[len(payload)/2:])
		in := b.NewBinaryArray()
		b.Release()
		defer in.Release()
		rec, errs, err := p.wasm.Decode(context.Background(), in)
		if errors.Is(err, ErrMemoryLimit) {
			// The sandbox's memory cap is the host's, not the decoder's: the
			// native build has none. An input that makes the decoder
			// allocate past it (an Avro length prefix larger than the data)
			// is stopped there by design; the two cannot be compared.
			t.Skipf("wasm stopped at its memory cap: %v", err)
		}
		if err != nil {
			t.Fatalf("wasm: %v", err)
		}
		defer rec.Release()
		defer errs.Release()
		nrec, nerrs, err := p.native.Decode(context.Background(), in)
		if err != nil {
			t.Fatalf("native: %v", err)
		}
		defer nrec.Release()
		defer nerrs.Release()
		sameOutput(t, rec, errs, nrec, nerrs)
		for i, c := range nrec.Columns() {
			if err := array.ValidateFull(c); err != nil {
				t.Fatalf("native column %d invalid: %v", i, err)
			}
		}
	})
}
