// Package decode runs payload decoders compiled to WebAssembly (the
// pubsub-go decoder ABI, docs/decoder-abi.md) on wazero, in a sandbox: no
// filesystem, network, environment or arguments, a memory cap per module
// instance, and a time limit per batch. A trap, an out-of-memory or a
// runaway loop fails that batch and discards the instance; the process and
// the other instances carry on.
//
// A Decoder turns one batch of payloads into one Arrow record batch with a
// single call into the module (never one call per message).
package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/abi"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// ErrorColumn is the utf8 column every module appends to its output: null
// for a decoded row, the error message for a rejected one. Decode returns
// it separately.
const ErrorColumn = "__error"

// Defaults for Spec's limits.
const (
	DefaultMemoryLimitMB = 256
	DefaultTimeout       = 10 * time.Second
	maxMemoryLimitMB     = 4096 // all a 32-bit WebAssembly memory can address
)

// Spec describes a decoder.
type Spec struct {
	// Builtin ("json" or "avro") runs that built-in decoder natively, in
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
	// to maxPinned more may be held by batches still in use (pin.go).
	MaxInstances int

	// Engine runs the module: EngineWazero (the default, also for ""),
	// EngineWasmtime, which needs WasmtimeLibrary, the path of wasmtime's
	// C library (_libwasmtime.so in the wasmtime Python package), or
	// EngineAuto: wasmtime when WasmtimeLibrary loads, else wazero.
	Engine          string
	WasmtimeLibrary string

	// Topic decodes by the topic's schema revisions (Builtin only): use
	// DecodeRouted.
	Topic *TopicSchema

	engine engineOptions // set by this package's tests and benchmarks only
}

// The engines that run modules (Spec.Engine).
const (
	EngineWazero   = "wazero"
	EngineWasmtime = "wasmtime"
	// EngineAuto is what Python asks for by default: wasmtime is about
	// 1.7x wazero with the sandbox on (RATIONALE.md), but an optional
	// package, so without a usable library (none given, another major
	// version, a build without cgo) the module runs in wazero, whole.
	EngineAuto = "auto"
)

// errNoWasmtime wraps why the wasmtime engine cannot run here (no library
// path, a library that does not load or is of another version, no cgo):
// EngineAuto then runs the module in wazero.
var errNoWasmtime = errors.New("no usable wasmtime library")

// defaultEngine is the engine (and its library) of a Spec that names
// none: wazero until wasmtime is made the default (issue 41); this
// package's tests set it to run their modules on wasmtime.
var defaultEngine struct{ name, lib string }

// Decoder decodes batches of payloads. It is safe for concurrent use: each
// Decode borrows an instance from a pool.
type Decoder struct {
	name    string
	native  *nativePool // Builtin; nil for a module
	mod     compiledModule
	config  []byte // pg_init's config, ABI 1 (also the built-ins')
	configs configs
	target  *arrow.Schema // Spec.Schema
	limit   uint64
	timeout time.Duration
	alloc   memory.Allocator
	schema  *arrow.Schema // decoded schema, without ErrorColumn
	full    *arrow.Schema // as the module writes it

	idle  chan *instance
	slots chan struct{} // one token per live instance not pinned
	pins  chan struct{} // one token per pinned instance (pin.go)
	mu    sync.Mutex
	done  bool
}

// NewDecoder compiles (or finds in the cache) the module, starts one
// instance, initialises it with the schema and options, and decodes an
// empty batch to learn and check the output schema. Output buffers are
// allocated with alloc (production: C memory, go/internal/cmem).
func NewDecoder(ctx context.Context, spec Spec, alloc memory.Allocator) (*Decoder, error) {
	d := &Decoder{name: spec.Format, alloc: alloc, timeout: spec.Timeout}
	if d.name == "" {
		d.name = spec.Builtin
	}
	if d.name == "" {
		d.name = "custom"
	}
	wasm := spec.Wasm
	if spec.Builtin != "" {
		if wasm != nil || spec.WasmPath != "" {
			return nil, fmt.Errorf("decode: %s decoder: Builtin and a module (WasmPath, Wasm) are exclusive", d.name)
		}
	} else if wasm == nil {
		if spec.WasmPath == "" {
			return nil, fmt.Errorf("decode: %s decoder: no WasmPath or Wasm given", d.name)
		}
		var err error
		if wasm, err = os.ReadFile(spec.WasmPath); err != nil {
			return nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
		}
	}
	mb := spec.MemoryLimitMB
	if mb <= 0 {
		mb = DefaultMemoryLimitMB
	}
	if mb > maxMemoryLimitMB {
		return nil, fmt.Errorf("decode: MemoryLimitMB %d exceeds the %d MiB of 32-bit WebAssembly", mb, maxMemoryLimitMB)
	}
	d.limit = uint64(mb) << 20
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	n := spec.MaxInstances
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	d.idle = make(chan *instance, n)
	d.slots = make(chan struct{}, n)
	d.pins = make(chan struct{}, maxPinned)
	if d.alloc == nil {
		d.alloc = memory.DefaultAllocator
	}

	var schemaIPC []byte
	if spec.Schema != nil {
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(spec.Schema))
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("decode: %s decoder: schema: %w", d.name, err)
		}
		schemaIPC = buf.Bytes()
	}
	if spec.Builtin == "protobuf" {
		var err error
		if spec.Options, err = withDescriptorSet(spec.Options); err != nil {
			return nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
		}
	}
	d.config = sdk.EncodeConfig(schemaIPC, spec.Options)
	d.target = spec.Schema
	d.configs.v1 = d.config
	var v2schema []byte
	if spec.Schema != nil {
		v2schema, d.configs.v2err = abi.EncodeFields(nil, spec.Schema.Fields())
	}
	d.configs.v2 = sdk.EncodeConfig(v2schema, spec.Options)

	var err error
	if spec.Builtin != "" {
		if d.native, err = newNativePool(spec.Builtin, d.config, n); err != nil {
			return nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
		}
		if spec.Topic != nil {
			d.native.factory = spec.Topic.factory()
		}
		out, err := d.native.schemaIPC()
		if err != nil {
			return nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
		}
		rec, errs, err := d.read(out, true)
		if err != nil {
			return nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
		}
		rec.Release()
		errs.Release()
	} else {
		if spec.Engine == "" {
			spec.Engine, spec.WasmtimeLibrary = defaultEngine.name, defaultEngine.lib
		}
		switch spec.Engine {
		case "", EngineWazero:
			d.mod, err = compiled(ctx, wasm, uint32(d.limit/65536), spec.engine)
		case EngineWasmtime:
			d.mod, err = compiledWasmtime(wasm, spec.WasmtimeLibrary, spec.engine)
		case EngineAuto:
			d.mod, err = compiledWasmtime(wasm, spec.WasmtimeLibrary, spec.engine)
			if errors.Is(err, errNoWasmtime) {
				d.mod, err = compiled(ctx, wasm, uint32(d.limit/65536), spec.engine)
			}
		default:
			err = fmt.Errorf("engine %q is not %q, %q or %q", spec.Engine, EngineAuto, EngineWazero, EngineWasmtime)
		}
		if err != nil {
			return nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
		}
		probe := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		empty := probe.NewBinaryArray()
		probe.Release()
		defer empty.Release()
		rec, errs, err := d.decode(ctx, empty, true)
		if err != nil {
			d.Close()
			return nil, err
		}
		rec.Release()
		errs.Release()
	}
	if spec.Schema != nil && !d.schema.Equal(spec.Schema) {
		d.Close()
		return nil, fmt.Errorf("decode: %s decoder: %w: module produced schema %s, want %s", d.name, ErrDecoder, d.schema, spec.Schema)
	}
	return d, nil
}

// Schema is the schema of decoded batches.
func (d *Decoder) Schema() *arrow.Schema { return d.schema }

// Decode decodes one batch: row i of decoded comes from payloads[i]; errs
// has the same length, null where the row decoded and the error message
// where it did not (that row is then null in every column). Null payloads
// are decoded as empty ones. The caller releases both arrays. A non-nil
// error fails the whole batch (see ErrTimeLimit and friends).
func (d *Decoder) Decode(ctx context.Context, payloads *array.Binary) (arrow.RecordBatch, *array.String, error) {
	return d.decode(ctx, payloads, false)
}

// DecodeRouted is Decode for a decoder with a Spec.Topic: route gives
// each row's revision and encoding (from its message's attributes).
func (d *Decoder) DecodeRouted(payloads *array.Binary, route func(i int) Route) (arrow.RecordBatch, *array.String, error) {
	if d.native == nil {
		return nil, nil, fmt.Errorf("decode: %s decoder: %w: routed decoding needs a built-in decoder", d.name, ErrDecoder)
	}
	return d.decodeNative(payloads, route)
}

func (d *Decoder) decode(ctx context.Context, payloads *array.Binary, first bool) (arrow.RecordBatch, *array.String, error) {
	if d.native != nil {
		return d.decodeNative(payloads, nil)
	}
	in, err := d.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	out, err := in.call(ctx, "pg_decode", inputSize(payloads), func(b []byte) { fillInput(b, payloads) })
	if err != nil {
		d.drop(in, err)
		return nil, nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
	}
	var rec arrow.RecordBatch
	var errs *array.String
	var p *pin
	pinned := false
	if in.abi == abiVersion2 {
		if p = d.tryPin(in); p != nil {
			defer p.parent.Release() // the batch's buffers hold their own references
		}
		rec, errs, pinned, err = d.readV2(in, out, first, p)
	} else {
		rec, errs, err = d.read(out, first)
	}
	switch {
	case err != nil:
		d.drop(in, ErrCrashed)
		return nil, nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
	case pinned:
		d.keep(p, in)
	default:
		d.put(in)
	}
	if rec.NumRows() != int64(payloads.Len()) {
		rec.Release()
		errs.Release()
		return nil, nil, fmt.Errorf("decode: %s decoder: %w: %d rows for %d payloads", d.name, ErrCrashed, rec.NumRows(), payloads.Len())
	}
	return rec, errs, nil
}

// decodeNative decodes with the built-in decoder in-process.
func (d *Decoder) decodeNative(payloads *array.Binary, route func(int) Route) (arrow.RecordBatch, *array.String, error) {
	d.mu.Lock()
	closed := d.done
	d.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	cols, err := d.native.decode(payloads, route, d.full, d.alloc)
	if err != nil {
		return nil, nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
	}
	n := len(cols) - 1
	rec := array.NewRecordBatch(d.schema, cols[:n], int64(payloads.Len()))
	for _, c := range cols[:n] {
		c.Release()
	}
	return rec, cols[n].(*array.String), nil
}

// read parses the module's IPC output. Every buffer is copied into
// d.alloc: nothing aliases module memory, which the next call reuses.
func (d *Decoder) read(out []byte, first bool) (arrow.RecordBatch, *array.String, error) {
	r, err := ipc.NewReader(bytes.NewReader(out), ipc.WithAllocator(d.alloc))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: unreadable output: %v", ErrCrashed, err)
	}
	defer r.Release()
	if !r.Next() {
		return nil, nil, fmt.Errorf("%w: output has no record batch: %v", ErrCrashed, r.Err())
	}
	full := r.RecordBatch()
	sc := full.Schema()
	n := int(full.NumCols()) - 1
	if n < 0 || sc.Field(n).Name != ErrorColumn || sc.Field(n).Type.ID() != arrow.STRING {
		return nil, nil, fmt.Errorf("%w: output lacks the utf8 %s column", ErrCrashed, ErrorColumn)
	}
	if first {
		md := sc.Metadata()
		d.full = sc
		d.schema = arrow.NewSchema(sc.Fields()[:n], &md)
	} else if !sc.Equal(d.full) {
		return nil, nil, fmt.Errorf("%w: output schema changed to %s", ErrCrashed, sc)
	}
	for i, c := range full.Columns() {
		if c.DataType().ID() == arrow.NULL {
			continue // nothing to check (and IPC gives it no buffers, which ValidateFull rejects)
		}
		if err := validate(c); err != nil {
			return nil, nil, fmt.Errorf("%w: output column %q: %v", ErrCrashed, sc.Field(i).Name, err)
		}
	}
	rec := array.NewRecordBatch(d.schema, full.Columns()[:n], full.NumRows())
	errs := full.Column(n).(*array.String)
	errs.Retain()
	return rec, errs, nil
}

// readV2 reads an ABI 2 output layout. The schema is the target, or the
// module's pg_schema when none was given.
func (d *Decoder) readV2(in *instance, out []byte, first bool, p *pin) (arrow.RecordBatch, *array.String, bool, error) {
	if first {
		sc := d.target
		if sc == nil {
			fields, err := abi.DecodeFields(in.schema)
			if err != nil {
				return nil, nil, false, fmt.Errorf("%w: pg_schema: %v", ErrCrashed, err)
			}
			sc = arrow.NewSchema(fields, nil)
		}
		d.schema = sc
		md := sc.Metadata()
		d.full = arrow.NewSchema(append(append([]arrow.Field(nil), sc.Fields()...),
			arrow.Field{Name: ErrorColumn, Type: arrow.BinaryTypes.String, Nullable: true}), &md)
	}
	var guest *memory.Buffer
	if p != nil {
		guest = p.parent
	}
	cols, rows, pinned, err := abi.ReadLayout(out, in.mem, d.full, d.alloc, guest)
	if err != nil {
		return nil, nil, false, err
	}
	n := len(cols) - 1
	rec := array.NewRecordBatch(d.schema, cols[:n], int64(rows))
	for _, c := range cols[:n] {
		c.Release()
	}
	return rec, cols[n].(*array.String), pinned, nil
}

// get borrows an idle instance or starts a new one when under the bound.
func (d *Decoder) get(ctx context.Context) (*instance, error) {
	for {
		d.mu.Lock()
		closed := d.done
		d.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		select {
		case in := <-d.idle:
			return in, nil
		default:
		}
		select {
		case in := <-d.idle:
			return in, nil
		case d.slots <- struct{}{}:
			ictx, cancel := context.WithTimeout(ctx, d.timeout)
			in, err := newInstance(ictx, d.mod, &d.configs, d.limit)
			cancel()
			if err != nil {
				<-d.slots
				return nil, fmt.Errorf("decode: %s decoder: %w", d.name, err)
			}
			return in, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (d *Decoder) put(in *instance) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		in.close()
		<-d.slots
		return
	}
	d.idle <- in
}

// drop keeps an instance that failed cleanly (ErrDecoder) and discards
// one that trapped, timed out or ran out of memory.
func (d *Decoder) drop(in *instance, err error) {
	if isClean(err) {
		d.put(in)
		return
	}
	in.close()
	<-d.slots
}

// Close closes idle instances now and busy ones when their batch ends.
func (d *Decoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return nil
	}
	d.done = true
	for {
		select {
		case in := <-d.idle:
			in.close()
			<-d.slots
		default:
			return nil
		}
	}
}

// validate checks a module's output array fully (offsets, UTF-8): it is
// not trusted. arrow-go panics on some bad offsets instead of returning an
// error; that is an error here too.
func validate(a arrow.Array) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid: %v", r)
		}
	}()
	return array.ValidateFull(a)
}
