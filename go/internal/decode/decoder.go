// Package decode turns a batch of Pub/Sub payloads into one Arrow record
// batch with one call into a decoder (never one call per message). A
// decoder is a built-in format (json, avro, protobuf), run natively by
// package native, or a module the user brings, compiled to WebAssembly
// (the pubsub-go decoder ABI, docs/decoder-abi.md) and run by an engine
// (engine.Engine: packages wazero and wasmtime; "auto" picks wasmtime when
// its library loads, else wazero) in a sandbox: no filesystem, network,
// environment or arguments, a memory cap per module instance, and a time
// limit per batch. A trap, an out-of-memory or a runaway loop fails that
// batch and discards the instance; the process and the other instances
// carry on.
//
// This package is the decoder as its users see it: its config
// (DecoderConfig, validated in one place), the Decoder, and the topic
// schema router. The engines, the ABI host (internal/guest) and the ABI's
// formats (internal/abi) sit below it; an engine registers itself in
// engines.go's imports.
package decode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/abi"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/guest"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/native"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// ErrorColumn is the utf8 column every module appends to its output: null
// for a decoded row, the error message for a rejected one. Decode returns
// it separately.
const ErrorColumn = abi.ErrorColumn

// Defaults for Spec's limits.
const (
	DefaultMemoryLimitMB = 256
	DefaultTimeout       = 10 * time.Second
	maxMemoryLimitMB     = 4096 // all a 32-bit WebAssembly memory can address
)

// Spec describes a decoder.
type Spec struct {
	// Builtin (one of Builtins) runs that built-in decoder natively, in
	// the host (trusted code: no sandbox, no memory cap or time limit).
	// Exclusive with WasmPath and Wasm.
	Builtin string
	// WasmPath is the module file (e.g. the built-in json.wasm or avro.wasm
	// shipped in the Python package). Wasm, if set, is used instead.
	WasmPath string
	Wasm     []byte
	// Format names the decoder in error messages ("json", "avro", or a
	// custom name); the module (or Builtin) is what decides the format.
	Format string
	// Schema is the target schema. Required by the JSON decoder; the Avro
	// decoder derives one from Options["avro_schema"] when it is nil.
	Schema *arrow.Schema
	// Options are passed to the module (e.g. "avro_schema", "timezone").
	Options map[string]string
	// MemoryLimitMB caps each instance's linear memory (default 256).
	MemoryLimitMB int
	// Timeout bounds one batch (default 10s).
	Timeout time.Duration
	// MaxInstances bounds concurrent instances (default GOMAXPROCS); up
	// to 2 more may be held by batches still in use (internal/guest's pins).
	MaxInstances int

	// Engine runs the module (EngineNames): "" is DefaultEngine.
	// WasmtimeLibrary is the path of wasmtime's C library
	// (_libwasmtime.so in the wasmtime Python package).
	Engine          string
	WasmtimeLibrary string

	// Topic decodes by the topic's schema revisions (Builtin only): use
	// DecodeRouted.
	Topic *TopicSchema

	tuning engine.Tuning // set by this package's tests and benchmarks only
}

// Decoder decodes batches of payloads. It is safe for concurrent use.
type Decoder struct {
	name   string
	native *native.Pool // a built-in format; nil for a module
	guest  *guest.Pool  // a module's instances
	alloc  memory.Allocator
	out    abi.Schemas

	mu   sync.Mutex
	done bool
}

// NewDecoder compiles (or finds in the cache) the module, starts one
// instance, initialises it with the schema and options, and decodes an
// empty batch to learn and check the output schema. Output buffers are
// allocated with alloc (production: C memory, go/internal/cmem).
func NewDecoder(ctx context.Context, spec Spec, alloc memory.Allocator) (*Decoder, error) {
	d := &Decoder{name: spec.Format, alloc: alloc}
	if d.name == "" {
		d.name = spec.Builtin
	}
	if d.name == "" {
		d.name = "custom"
	}
	if d.alloc == nil {
		d.alloc = memory.DefaultAllocator
	}
	if err := d.start(ctx, spec); err != nil {
		return nil, err
	}
	if spec.Schema != nil && !d.out.Decoded.Equal(spec.Schema) {
		d.Close()
		return nil, fmt.Errorf("decode: %s decoder: %w: module produced schema %s, want %s", d.name, ErrDecoder, d.out.Decoded, spec.Schema)
	}
	return d, nil
}

// start starts the decoder: the built-in one natively, a module in its
// engine; either way d.out is then the output schema.
func (d *Decoder) start(ctx context.Context, spec Spec) error {
	failed := func(err error) error { return fmt.Errorf("decode: %s decoder: %w", d.name, err) }
	wasm, err := spec.module()
	if err != nil {
		return failed(err)
	}
	mb := spec.MemoryLimitMB
	if mb <= 0 {
		mb = DefaultMemoryLimitMB
	}
	if mb > maxMemoryLimitMB {
		return fmt.Errorf("decode: MemoryLimitMB %d exceeds the %d MiB of 32-bit WebAssembly", mb, maxMemoryLimitMB)
	}
	n := spec.MaxInstances
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	var schemaIPC []byte
	if spec.Schema != nil {
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(spec.Schema))
		if err := w.Close(); err != nil {
			return failed(fmt.Errorf("schema: %w", err))
		}
		schemaIPC = buf.Bytes()
	}
	options := spec.Options
	if spec.Builtin == "protobuf" {
		if options, err = withDescriptorSet(options); err != nil {
			return failed(err)
		}
	}
	config := sdk.EncodeConfig(schemaIPC, options) // pg_init's, ABI 1 (also the built-ins')
	if wasm == nil {
		if err := d.startNative(spec, config, n); err != nil {
			return failed(err)
		}
		return nil
	}
	configs := guest.Configs{V1: config}
	var v2schema []byte
	if spec.Schema != nil {
		v2schema, configs.V2Err = abi.EncodeFields(nil, spec.Schema.Fields())
	}
	configs.V2 = sdk.EncodeConfig(v2schema, options)
	limit := uint64(mb) << 20
	mod, err := compile(ctx, spec.Engine, wasm, engine.Options{MemoryPages: uint32(limit / 65536),
		Library: spec.WasmtimeLibrary, Tuning: spec.tuning})
	if err != nil {
		return failed(err)
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d.guest, err = guest.Open(ctx, guest.Setup{Name: d.name, Module: mod, Configs: configs, Target: spec.Schema,
		Limit: limit, Timeout: timeout, Instances: n, Alloc: d.alloc})
	if err != nil {
		return err // named by the pool
	}
	d.out = d.guest.Schemas()
	return nil
}

// module is the module's bytes; nil for a built-in decoder.
func (spec *Spec) module() ([]byte, error) {
	switch {
	case spec.Builtin != "":
		if spec.Wasm != nil || spec.WasmPath != "" {
			return nil, fmt.Errorf("Builtin and a module (WasmPath, Wasm) are exclusive")
		}
		return nil, nil
	case spec.Wasm != nil:
		return spec.Wasm, nil
	case spec.WasmPath == "":
		return nil, fmt.Errorf("no WasmPath or Wasm given")
	}
	return os.ReadFile(spec.WasmPath)
}

// startNative starts the built-in decoder and learns its output schema
// from an empty batch, as the .wasm build would write it.
func (d *Decoder) startNative(spec Spec, config []byte, n int) error {
	var err error
	if d.native, err = native.New(spec.Builtin, config, n); err != nil {
		return err
	}
	if spec.Topic != nil {
		d.native.Factory = spec.Topic.factory()
	}
	out, err := d.native.SchemaIPC()
	if err != nil {
		return err
	}
	full, err := abi.ReadIPC(out, d.alloc, &d.out)
	if err != nil {
		return err
	}
	full.Release()
	return nil
}

// Schema is the schema of decoded batches.
func (d *Decoder) Schema() *arrow.Schema { return d.out.Decoded }

// Decode decodes one batch: row i of decoded comes from payloads[i]; errs
// has the same length, null where the row decoded and the error message
// where it did not (that row is then null in every column). Null payloads
// are decoded as empty ones. The caller releases both arrays. A non-nil
// error fails the whole batch (see ErrTimeLimit and friends).
func (d *Decoder) Decode(ctx context.Context, payloads *array.Binary) (arrow.RecordBatch, *array.String, error) {
	if d.native != nil {
		return d.decodeNative(payloads, nil)
	}
	return d.guest.Decode(ctx, payloads)
}

// DecodeRouted is Decode for a decoder with a Spec.Topic: route gives
// each row's revision and encoding (from its message's attributes).
func (d *Decoder) DecodeRouted(payloads *array.Binary, route func(i int) Route) (arrow.RecordBatch, *array.String, error) {
	if d.native == nil {
		return nil, nil, fmt.Errorf("decode: %s decoder: %w: routed decoding needs a built-in decoder", d.name, ErrDecoder)
	}
	return d.decodeNative(payloads, route)
}

// decodeNative decodes with the built-in decoder in-process.
func (d *Decoder) decodeNative(payloads *array.Binary, route func(int) Route) (arrow.RecordBatch, *array.String, error) {
	d.mu.Lock()
	closed := d.done
	d.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	cols, err := d.native.Decode(payloads, route, d.out.Full, d.alloc)
	if err != nil {
		return nil, nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
	}
	rec, errs := d.out.Split(cols, int64(payloads.Len()))
	for _, c := range cols {
		c.Release()
	}
	return rec, errs, nil
}

// Close closes idle instances now and busy ones when their batch ends.
func (d *Decoder) Close() error {
	d.mu.Lock()
	d.done = true
	d.mu.Unlock()
	if d.guest != nil {
		d.guest.Close()
	}
	return nil
}
