package decode

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/testlib"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/wasmtime"
)

// Decode throughput through WebAssembly (MB/s of payload). The same logic
// compiled natively: BenchmarkDecode{JSON,Avro}Native in wasm-decoders.

// benchRows is the payloads per batch: 1000, or BENCH_ROWS (to see how the
// host's work scales with the batch, e.g. at Spark's Arrow batch of 10,000).
var benchRows = func() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 1000
}()

var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

const benchAvroSchema = `{"type": "record", "name": "E", "fields": [
  {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
  {"name": "tags", "type": {"type": "array", "items": "string"}}, {"name": "score", "type": "double"},
  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}`

func benchJSON(i int) []byte {
	return fmt.Appendf(nil, `{"id": %d, "name": "user-%d", "tags": ["alpha", "beta", "gamma"], "score": %d.25, "at": "2024-05-06T07:08:%02d.123456Z", "extra": {"ignored": [1, 2, 3]}}`, i, i, i, i%60)
}

func benchAvro(i int) []byte {
	zz := func(b []byte, v int64) []byte { return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63)) }
	str := func(b []byte, s string) []byte { return append(zz(b, int64(len(s))), s...) }
	b := zz(nil, int64(i))
	b = str(b, fmt.Sprintf("user-%d", i))
	b = zz(b, 3)
	for _, t := range []string{"alpha", "beta", "gamma"} {
		b = str(b, t)
	}
	b = zz(b, 0)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(i)+0.25))
	return zz(b, 1714979289123456+int64(i))
}

func benchDecode(b *testing.B, spec DecoderConfig, gen func(int) []byte) {
	mem := mallocator.NewMallocator()
	d, err := NewDecoder(context.Background(), spec, mem)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	bb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	for i := 0; i < benchRows; i++ {
		bb.Append(gen(i))
	}
	in := bb.NewBinaryArray()
	bb.Release()
	defer in.Release()
	b.SetBytes(int64(len(in.ValueBytes())))
	b.ReportAllocs()
	// Also MB/s of this thread's CPU time (cpu-MB/s): on a machine shared
	// with other work the wall-clock figure mostly measures the others.
	// Work on other threads (the garbage collector's) is not in it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0 := threadCPU()
	for i := 0; i < b.N; i++ {
		rec, errs, err := d.Decode(context.Background(), in)
		if err != nil {
			b.Fatal(err)
		}
		if errs.NullN() != benchRows {
			b.Fatalf("row errors: %v", errs)
		}
		rec.Release()
		errs.Release()
	}
	if cpu := threadCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)*float64(len(in.ValueBytes()))/cpu.Seconds()/1e6, "cpu-MB/s")
	}
}

func BenchmarkDecodeJSONWasm(b *testing.B) {
	benchDecode(b, DecoderConfig{Wasm: guestModule(b, "cmd/json"), Target: benchSchema}, benchJSON)
}

func BenchmarkDecodeAvroWasm(b *testing.B) {
	spec := DecoderConfig{Wasm: guestModule(b, "cmd/avro"), Target: benchSchema, Options: map[string]string{"avro_schema": benchAvroSchema}}
	benchDecode(b, spec, benchAvro)
}

// The built-in decoders run natively in the host (what schema mode runs
// for format=json|avro), output copied into C memory.
func BenchmarkDecodeJSONNative(b *testing.B) {
	benchDecode(b, DecoderConfig{Format: "json", Target: benchSchema}, benchJSON)
}

func BenchmarkDecodeAvroNative(b *testing.B) {
	spec := DecoderConfig{Format: "avro", Target: benchSchema, Options: map[string]string{"avro_schema": benchAvroSchema}}
	benchDecode(b, spec, benchAvro)
}

// The same modules with the time limit enforced by wazero's
// WithCloseOnContextDone (the fallback) instead of the loop counter (a
// build of their own: the engine options are part of the module cache's
// key, and so is the memory cap).
func BenchmarkDecodeJSONWasmCloseOnDone(b *testing.B) {
	benchDecode(b, DecoderConfig{Wasm: guestModule(b, "cmd/json"), Target: benchSchema, MemoryLimitMB: 255,
		tuning: engine.Tuning{CloseOnDone: true}}, benchJSON)
}

func BenchmarkDecodeAvroWasmCloseOnDone(b *testing.B) {
	spec := DecoderConfig{Wasm: guestModule(b, "cmd/avro"), Target: benchSchema, Options: map[string]string{"avro_schema": benchAvroSchema}, MemoryLimitMB: 255,
		tuning: engine.Tuning{CloseOnDone: true}}
	benchDecode(b, spec, benchAvro)
}

// The example decoder (VPC flow log lines) per guest SDK in wazero, with
// the memory cap and time limit on. Natively: BenchmarkVpcflowNative in
// wasm-decoders/examples/vpcflow (Go) and examples/vpcflow-c/bench_native.c (C).
func vpcLine(i int) []byte { // = vpcLine in wasm-decoders/examples/vpcflow
	return fmt.Appendf(nil, "2 123456789010 eni-%08x 172.31.%d.%d 10.0.%d.%d %d 443 6 %d %d %d %d ACCEPT OK",
		i, i%256, i%200, i%100, i%250, 20000+i%40000, i%1000, i*37%100000, 1418530010+i, 1418530070+i)
}

func BenchmarkVpcflowGoWasm(b *testing.B) {
	benchDecode(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow")}, vpcLine)
}

func BenchmarkVpcflowCWasm(b *testing.B) {
	benchDecode(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow-c/vpcflow.c")}, vpcLine)
}

// What the time limit costs: the C example without any.
func BenchmarkVpcflowCWasmNoTimeLimit(b *testing.B) {
	benchDecode(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow-c/vpcflow.c"), MemoryLimitMB: 254,
		tuning: engine.Tuning{NoTimeLimit: true}}, vpcLine)
}

// The C example with the time limit enforced by WithCloseOnContextDone
// instead of the loop counter.
func BenchmarkVpcflowCWasmCloseOnDone(b *testing.B) {
	benchDecode(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow-c/vpcflow.c"), MemoryLimitMB: 253,
		tuning: engine.Tuning{CloseOnDone: true}}, vpcLine)
}

// The same modules in the wasmtime engine (engine_wasmtime.go), memory cap
// and time limit on; NoTimeLimit: an engine without epoch interruption,
// to measure what the time limit costs there.
func wasmtimeSpec(b *testing.B, spec DecoderConfig) DecoderConfig {
	lib, err := testlib.WasmtimeLibrary()
	if err != nil {
		b.Skip(err)
	}
	spec.Engine, spec.WasmtimeLibrary = wasmtime.Name, lib
	return spec
}

func BenchmarkVpcflowCWasmtime(b *testing.B) {
	benchDecode(b, wasmtimeSpec(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow-c/vpcflow.c")}), vpcLine)
}

func BenchmarkVpcflowCWasmtimeNoTimeLimit(b *testing.B) {
	benchDecode(b, wasmtimeSpec(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow-c/vpcflow.c"),
		tuning: engine.Tuning{NoTimeLimit: true}}), vpcLine)
}

// The C example under epoch interruption (what a module wasmrewrite cannot
// probe gets), and probed but with no time limit armed: what the probes
// alone cost (BenchmarkVpcflowCWasmtime adds the fence's tick and
// signal mask).
func BenchmarkVpcflowCWasmtimeEpoch(b *testing.B) {
	benchDecode(b, wasmtimeSpec(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow-c/vpcflow.c"),
		tuning: engine.Tuning{Epoch: true}}), vpcLine)
}

func BenchmarkVpcflowCWasmtimeProbes(b *testing.B) {
	benchDecode(b, wasmtimeSpec(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow-c/vpcflow.c"),
		tuning: engine.Tuning{NoTimeLimit: true, Probes: true}}), vpcLine)
}

func BenchmarkVpcflowGoWasmtime(b *testing.B) {
	benchDecode(b, wasmtimeSpec(b, DecoderConfig{Wasm: guestModule(b, "examples/vpcflow")}), vpcLine)
}

func BenchmarkDecodeJSONWasmtime(b *testing.B) {
	benchDecode(b, wasmtimeSpec(b, DecoderConfig{Wasm: guestModule(b, "cmd/json"), Target: benchSchema}), benchJSON)
}
