package subscriber

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// DecodeErrorColumn is the last column of a decoded batch: null where the
// row decoded, the decoder's message where it did not (the decoded
// columns of that row are then null).
const DecodeErrorColumn = "__decode_error"

// DecoderConfig turns on schema mode: Next decodes each batch's payloads
// with a built-in decoder (natively) or a WebAssembly decoder
// (docs/decoder-abi.md), one call per batch, and returns the decoded
// columns, then the raw columns, then DecodeErrorColumn. The C decoder API
// (pg_decoder_open) takes the same config.
type DecoderConfig struct {
	// Wasm is the path of a decoder module. Empty: Format names a built-in
	// decoder ("json" or "avro"), which runs natively.
	Wasm string `json:"wasm"`
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

	target *arrow.Schema // Schema, parsed by validate
}

// validate fills defaults and checks the fields; errors name the JSON key.
func (d *DecoderConfig) validate() error {
	if d.Wasm == "" {
		if !decode.IsBuiltin(d.Format) {
			return invalid("decoder.format %q is not a built-in decoder (json, avro): give decoder.format "+
				"json or avro, or decoder.wasm, the path of a decoder module (.wasm)", d.Format)
		}
	} else if st, err := os.Stat(d.Wasm); err != nil || st.IsDir() {
		return invalid("decoder.wasm %q is not a readable file: %v", d.Wasm, statErr(err))
	}
	if err := intField("decoder.memory_limit_mb", &d.MemoryLimitMB); err != nil {
		return err
	}
	if err := intField("decoder.timeout_ms", &d.TimeoutMs); err != nil {
		return err
	}
	d.target = nil
	if d.Schema != "" {
		raw, err := base64.StdEncoding.DecodeString(d.Schema)
		if err != nil {
			return invalid("decoder.schema is not base64: %v", err)
		}
		r, err := ipc.NewReader(bytes.NewReader(raw))
		if err != nil {
			return invalid("decoder.schema is not an Arrow IPC schema: %v", err)
		}
		d.target = r.Schema()
		r.Release()
		if err := checkNames(d.target); err != nil {
			return invalid("decoder.schema: %v", err)
		}
	}
	return nil
}

func statErr(err error) error {
	if err == nil {
		return errors.New("is a directory")
	}
	return err
}

// checkNames rejects decoded fields named like an output column of their own.
func checkNames(s *arrow.Schema) error {
	for _, f := range s.Fields() {
		if f.Name == DecodeErrorColumn || len(rawbatch.Schema().FieldIndices(f.Name)) > 0 {
			return fmt.Errorf("field %q collides with a raw column or %s of the decoded batch; rename it", f.Name, DecodeErrorColumn)
		}
	}
	return nil
}

// decoding is the schema-mode stage: the decode pool's workers run it on
// finished lots (decode_pool.go).
type decoding struct {
	cfg    *DecoderConfig
	dec    *decode.Decoder
	mem    memory.Allocator
	schema *arrow.Schema // decoded fields, raw fields, DecodeErrorColumn
}

// Open validates cfg and starts its decoder (compiling a module or
// finding it compiled) with at most maxInstances module instances; errors
// carry a status code (decodeStatus). Output is allocated with mem.
func (d *DecoderConfig) Open(ctx context.Context, mem memory.Allocator, maxInstances int) (*decode.Decoder, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	spec := decode.Spec{
		WasmPath:      d.Wasm,
		Format:        d.Format,
		Schema:        d.target,
		Options:       d.Options,
		MemoryLimitMB: d.MemoryLimitMB,
		Timeout:       time.Duration(d.TimeoutMs) * time.Millisecond,
		MaxInstances:  maxInstances,
	}
	if d.Wasm == "" {
		spec.Builtin = d.Format
	}
	dec, err := decode.NewDecoder(ctx, spec, mem)
	if err != nil {
		return nil, decodeStatus(err, d, "starting the decoder "+d.name(), "")
	}
	return dec, nil
}

// name is the decoder in messages: the module path or the built-in format.
func (d *DecoderConfig) name() string {
	if d.Wasm != "" {
		return d.Wasm
	}
	return "(built-in " + d.Format + ")"
}

// newDecoding starts the decoder of cfg.
func newDecoding(ctx context.Context, cfg *DecoderConfig, mem memory.Allocator) (*decoding, error) {
	dec, err := cfg.Open(ctx, mem, decodeWorkers()) // one instance per decode worker (decode_pool.go)
	if err != nil {
		return nil, err
	}
	if err := checkNames(dec.Schema()); err != nil {
		dec.Close()
		return nil, invalid("decoder %s: its schema: %v", cfg.name(), err)
	}
	fields := append(append([]arrow.Field{}, dec.Schema().Fields()...), rawbatch.Schema().Fields()...)
	fields = append(fields, arrow.Field{Name: DecodeErrorColumn, Type: arrow.BinaryTypes.String, Nullable: true})
	return &decoding{cfg: cfg, dec: dec, mem: mem, schema: arrow.NewSchema(fields, nil)}, nil
}

// apply decodes raw's payloads and returns the decoded batch and its
// number of rows that failed to decode. raw is not released.
func (d *decoding) apply(ctx context.Context, raw arrow.RecordBatch) (arrow.RecordBatch, int, error) {
	n := int(raw.NumRows())
	var decoded []arrow.Array
	var errs arrow.Array
	if n == 0 {
		// No call into the module for the many empty batches of an idle
		// subscription.
		for _, f := range d.dec.Schema().Fields() {
			decoded = append(decoded, array.MakeArrayOfNull(d.mem, f.Type, 0))
		}
		errs = array.MakeArrayOfNull(d.mem, arrow.BinaryTypes.String, 0)
	} else {
		rec, rowErrs, err := d.dec.Decode(ctx, raw.Column(rawbatch.ColPayload).(*array.Binary))
		if err != nil {
			return nil, 0, err
		}
		defer rec.Release()
		decoded = rec.Columns()
		for _, c := range decoded {
			c.Retain()
		}
		errs = rowErrs
	}
	cols := append(decoded, raw.Columns()...)
	cols = append(cols, errs)
	out := array.NewRecordBatch(d.schema, cols, int64(n))
	for _, c := range decoded {
		c.Release()
	}
	nerr := errs.Len() - errs.NullN()
	errs.Release()
	return out, nerr, nil
}

// close is a no-op on nil (a subscriber without a decoder).
func (d *decoding) close() {
	if d != nil {
		d.dec.Close()
	}
}

// Status gives a failure of the decoder of d a status code, naming the
// limit that was hit (see decodeStatus); what says what failed.
func (d *DecoderConfig) Status(err error, what string) error {
	return decodeStatus(err, d, what+" with the decoder "+d.name(), "")
}

// decodeStatus gives a decoder failure a status code and says which limit
// or part failed; note, if any, ends the message.
func decodeStatus(err error, cfg *DecoderConfig, what, note string) error {
	code := codes.InvalidArgument // the module rejected its config (ErrDecoder), or a file error
	kind, limit := rpc.Kind(""), ""
	switch {
	case errors.Is(err, decode.ErrTimeLimit):
		code, kind, limit = codes.DeadlineExceeded, rpc.KindDecoderTimeLimit, fmt.Sprintf(" (decoder.timeout_ms=%d)", cfg.TimeoutMs)
	case errors.Is(err, decode.ErrMemoryLimit):
		code, kind, limit = codes.ResourceExhausted, rpc.KindDecoderMemoryLimit, fmt.Sprintf(" (decoder.memory_limit_mb=%d)", cfg.MemoryLimitMB)
	case errors.Is(err, decode.ErrCrashed):
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
