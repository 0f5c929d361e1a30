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

// Defaults of DecoderConfig's limits (Limits has their ranges).
const (
	DefaultMemoryLimitMB = 256
	DefaultTimeout       = 10 * time.Second
	maxMemoryLimitMB     = 4096 // all a 32-bit WebAssembly memory can address
)

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

// NewDecoder validates c and starts its decoder: the built-in one, or the
// module compiled (or found in the cache) in its engine, one instance
// started and initialised with the schema and options, and an empty batch
// decoded to learn and check the output schema. Output buffers are
// allocated with alloc (production: C memory, go/internal/cmem). Its
// errors are the package's (ErrDecoder and friends); Open's carry a
// status code.
func NewDecoder(ctx context.Context, c DecoderConfig, alloc memory.Allocator) (*Decoder, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.start(ctx, alloc)
}

// start starts the decoder of a validated c.
func (c *DecoderConfig) start(ctx context.Context, alloc memory.Allocator) (*Decoder, error) {
	d := &Decoder{name: c.Format, alloc: alloc}
	if d.name == "" {
		d.name = "custom"
	}
	if d.alloc == nil {
		d.alloc = memory.DefaultAllocator
	}
	failed := func(err error) error { return fmt.Errorf("decode: %s decoder: %w", d.name, err) }
	wasm := c.Module
	if wasm == nil && c.Wasm != "" {
		var err error
		if wasm, err = os.ReadFile(c.Wasm); err != nil {
			return nil, failed(err)
		}
	}
	n := c.instances
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	configs, err := c.configs()
	if err != nil {
		return nil, failed(err)
	}
	if wasm == nil {
		err = d.startNative(c, configs.V1, n)
	} else {
		err = d.startModule(ctx, c, wasm, configs, n)
	}
	if err != nil {
		return nil, err
	}
	if c.Target != nil && !d.out.Decoded.Equal(c.Target) {
		d.Close()
		return nil, failed(fmt.Errorf("%w: module produced schema %s, want %s", ErrDecoder, d.out.Decoded, c.Target))
	}
	return d, nil
}

// configs are pg_init's config for each ABI version (ABI 1's is also the
// built-in decoders').
func (c *DecoderConfig) configs() (guest.Configs, error) {
	var schemaIPC, v2schema []byte
	var v2err error
	if c.Target != nil {
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(c.Target))
		if err := w.Close(); err != nil {
			return guest.Configs{}, fmt.Errorf("schema: %w", err)
		}
		schemaIPC = buf.Bytes()
		v2schema, v2err = abi.EncodeFields(nil, c.Target.Fields())
	}
	options := c.Options
	if c.Wasm == "" && c.Module == nil && c.Format == "protobuf" {
		var err error
		if options, err = withDescriptorSet(options); err != nil {
			return guest.Configs{}, err
		}
	}
	return guest.Configs{V1: sdk.EncodeConfig(schemaIPC, options), V2: sdk.EncodeConfig(v2schema, options), V2Err: v2err}, nil
}

// startModule compiles wasm in c's engine and starts its instance pool.
func (d *Decoder) startModule(ctx context.Context, c *DecoderConfig, wasm []byte, configs guest.Configs, n int) error {
	limit := uint64(c.MemoryLimitMB) << 20
	mod, err := compile(ctx, c.Engine, wasm, engine.Options{MemoryPages: uint32(limit / 65536),
		Library: c.WasmtimeLibrary, Tuning: c.tuning})
	if err != nil {
		return fmt.Errorf("decode: %s decoder: %w", d.name, err)
	}
	d.guest, err = guest.Open(ctx, guest.Setup{Name: d.name, Module: mod, Configs: configs, Target: c.Target,
		Limit: limit, Timeout: time.Duration(c.TimeoutMs) * time.Millisecond, Instances: n, Alloc: d.alloc})
	if err != nil {
		return err // named by the pool
	}
	d.out = d.guest.Schemas()
	return nil
}

// startNative starts the built-in decoder and learns its output schema
// from an empty batch, as the .wasm build would write it.
func (d *Decoder) startNative(c *DecoderConfig, config []byte, n int) error {
	var err error
	if d.native, err = native.New(c.Format, config, n); err == nil {
		if c.TopicSchema != nil {
			d.native.Factory = c.TopicSchema.factory()
		}
		var out []byte
		if out, err = d.native.SchemaIPC(); err == nil {
			var full arrow.RecordBatch
			if full, err = abi.ReadIPC(out, d.alloc, &d.out); err == nil {
				full.Release()
			}
		}
	}
	if err != nil {
		return fmt.Errorf("decode: %s decoder: %w", d.name, err)
	}
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

// DecodeRouted is Decode for a decoder with a TopicSchema: route gives
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
