package decode

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/native"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// DecodeErrorColumn is the last column of a decoded batch: null where the
// row decoded, the decoder's message where it did not (the decoded
// columns of that row are then null).
const DecodeErrorColumn = "__decode_error"

// DecoderConfig is a decoder as its users give it, in JSON: schema mode
// (the subscriber config's "decoder", go/internal/subscriber) and the C
// decoder API (pg_decoder_open) take it, and Go code (tests, benchmarks)
// with the fields JSON cannot carry. It decodes each batch's payloads
// with a built-in decoder (natively) or a WebAssembly decoder
// (docs/decoder-abi.md), one call per batch. Validate is the one check of
// every field.
type DecoderConfig struct {
	// Wasm is the path of a decoder module. Empty (and no Module): Format
	// names a built-in decoder (Builtins), which runs natively.
	Wasm string `json:"wasm"`
	// Module is a decoder module's bytes, instead of the file Wasm.
	Module []byte `json:"-"`
	// Format names the decoder in error messages ("json", "avro", ...);
	// without Wasm, the built-in decoder to run.
	Format string `json:"format"`
	// Schema is the target schema as base64 of Arrow IPC schema bytes
	// (pyarrow's Schema.serialize()). Empty: the module's own schema (the
	// Avro decoder derives one from the avro_schema option).
	Schema string `json:"schema"`
	// Options are passed to the module (e.g. "avro_schema", "timezone").
	Options map[string]string `json:"options"`
	// MemoryLimitMB caps the module's memory (default and range: Limits).
	MemoryLimitMB int `json:"memory_limit_mb"`
	// TimeoutMs bounds decoding one batch (default and range: Limits).
	TimeoutMs int `json:"timeout_ms"`
	// Engine runs the module: one of EngineNames; "" is DefaultEngine
	// ("auto": wasmtime when WasmtimeLibrary, the path of wasmtime's C
	// library, loads, else wazero).
	Engine          string `json:"engine"`
	WasmtimeLibrary string `json:"wasmtime_library"`
	// TopicSchema decodes each message by its topic's schema revision
	// (schemaFrom=topic; topicschema.go).
	TopicSchema *TopicSchema `json:"topic_schema"`

	// Target is the target schema: Schema, parsed by Validate, or given
	// as it is by Go code (with Schema empty).
	Target *arrow.Schema `json:"-"`

	instances int           // at most this many module instances (NewDecoder; Open's argument); 0: GOMAXPROCS
	tuning    engine.Tuning // set by this package's tests and benchmarks only
}

// Limits are the defaults and ranges of DecoderConfig's numeric fields, by
// their key in the subscriber config: the one place they are written.
// cmd/contract hands them to Python.
var Limits = map[string]clientopt.Limit{
	"decoder.memory_limit_mb": {Default: DefaultMemoryLimitMB, Min: 1, Max: maxMemoryLimitMB},
	"decoder.timeout_ms":      {Default: int64(DefaultTimeout / time.Millisecond), Min: 1, Max: 3_600_000},
}

// Validate fills defaults and checks the fields; errors name the JSON key.
func (d *DecoderConfig) Validate() error {
	module := d.Wasm != "" || d.Module != nil
	if d.TopicSchema != nil {
		if module {
			return invalid("decoder.topic_schema decodes with a built-in decoder, not decoder.wasm")
		}
		format, err := d.TopicSchema.validate()
		if err != nil {
			return err
		}
		d.Format = format
	}
	if !module {
		if !IsBuiltin(d.Format) {
			return invalid("decoder.format %q is not a built-in decoder (%s): give decoder.format "+
				"%s, or decoder.wasm, the path of a decoder module (.wasm)", d.Format, native.List(", "), native.List(" or "))
		}
	} else if d.Module == nil {
		if st, err := os.Stat(d.Wasm); err != nil || st.IsDir() {
			return invalid("decoder.wasm %q is not a readable file: %v", d.Wasm, statErr(err))
		}
	}
	if err := checkEngine(d.Engine, d.WasmtimeLibrary); err != nil {
		return err
	}
	if err := clientopt.ApplyLimit(Limits, "decoder.memory_limit_mb", &d.MemoryLimitMB); err != nil {
		return invalid("%v", err)
	}
	if err := clientopt.ApplyLimit(Limits, "decoder.timeout_ms", &d.TimeoutMs); err != nil {
		return invalid("%v", err)
	}
	if d.Schema != "" {
		raw, err := base64.StdEncoding.DecodeString(d.Schema)
		if err != nil {
			return invalid("decoder.schema is not base64: %v", err)
		}
		r, err := ipc.NewReader(bytes.NewReader(raw))
		if err != nil {
			return invalid("decoder.schema is not an Arrow IPC schema: %v", err)
		}
		d.Target = r.Schema()
		r.Release()
	}
	if d.Target != nil {
		if err := CheckNames(d.Target); err != nil {
			return invalid("decoder.schema: %v", err)
		}
	}
	return nil
}

// checkEngine is decoder.engine's check, the only one: a registered
// engine (or auto, or "" for DefaultEngine) given what it needs.
func checkEngine(name, lib string) error {
	if name == "" || name == EngineAuto {
		return nil // auto needs nothing: without a library it runs the module in wazero
	}
	e := engine.Lookup(name)
	if e == nil {
		return invalid("decoder.engine %q is not an engine: give %s", name, strings.Replace(engineList(), `"`+DefaultEngine+`"`, `"`+DefaultEngine+`" (the default)`, 1))
	}
	if err := e.Check(engine.Options{Library: lib}); err != nil {
		return invalid("decoder.engine %q %v", name, err)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return rpc.Errorf(codes.InvalidArgument, format, args...)
}

func statErr(err error) error {
	if err == nil {
		return errors.New("is a directory")
	}
	return err
}

// CheckNames rejects decoded fields named like a raw column or
// DecodeErrorColumn, which schema mode's batches also carry.
func CheckNames(s *arrow.Schema) error {
	for _, f := range s.Fields() {
		if f.Name == DecodeErrorColumn || len(rawbatch.Schema().FieldIndices(f.Name)) > 0 {
			return fmt.Errorf("field %q collides with a raw column or %s of the decoded batch; rename it", f.Name, DecodeErrorColumn)
		}
	}
	return nil
}

// Open validates d and starts its decoder (NewDecoder) with at most
// maxInstances module instances; errors carry a status code (StatusOf).
// Output is allocated with mem.
func (d *DecoderConfig) Open(ctx context.Context, mem memory.Allocator, maxInstances int) (*Decoder, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	c := *d
	c.instances = maxInstances
	dec, err := c.start(ctx, mem)
	if err != nil {
		return nil, d.StatusOf(err, "starting the decoder "+d.Name(), "")
	}
	return dec, nil
}

// Name is the decoder in messages: the module path or the built-in format.
func (d *DecoderConfig) Name() string {
	if d.Wasm != "" {
		return d.Wasm
	}
	return "(built-in " + d.Format + ")"
}

// Status gives a failure of the decoder of d a status code (StatusOf);
// what says what failed.
func (d *DecoderConfig) Status(err error, what string) error {
	return d.StatusOf(err, what+" with the decoder "+d.Name(), "")
}

// StatusOf gives a decoder failure a status code and says which limit or
// part failed; note, if any, ends the message.
func (d *DecoderConfig) StatusOf(err error, what, note string) error {
	code := codes.InvalidArgument // the module rejected its config (ErrDecoder), or a file error
	kind, limit := rpc.Kind(""), ""
	switch {
	case errors.Is(err, ErrTimeLimit):
		code, kind, limit = codes.DeadlineExceeded, rpc.KindDecoderTimeLimit, fmt.Sprintf(" (decoder.timeout_ms=%d)", d.TimeoutMs)
	case errors.Is(err, ErrMemoryLimit):
		code, kind, limit = codes.ResourceExhausted, rpc.KindDecoderMemoryLimit, fmt.Sprintf(" (decoder.memory_limit_mb=%d)", d.MemoryLimitMB)
	case errors.Is(err, ErrCrashed):
		code, kind = codes.Aborted, rpc.KindDecoderCrashed
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	if note != "" {
		note = "; " + note
	}
	out := rpc.Errorf(code, "%s: %v%s%s", what, err, limit, note)
	if kind != "" {
		out = rpc.WithKind(kind, out)
	}
	return out
}
