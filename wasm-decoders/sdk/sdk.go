// Package sdk implements the pubsub-go decoder ABI (docs/decoder-abi.md)
// for decoders written in Go and compiled with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
//
// A decoder registers a Factory from an init function; the SDK provides
// the exported functions, memory management, input framing, per-record
// error handling and Arrow IPC output:
//
//	func init() { sdk.Register(newDecoder) }
//
// Decoding logic is ordinary Go: Module runs the same pipeline natively,
// so decoders can be unit-tested and fuzzed without WebAssembly.
package sdk

import (
	"errors"
	"fmt"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// ABIVersion is the decoder ABI version this SDK implements.
const ABIVersion = 1

// ErrorColumn is the name of the utf8 column appended to every output
// batch: null for a decoded row, the error message for a rejected one.
const ErrorColumn = "__error"

// Config is what the host passes to pg_init.
type Config struct {
	// Schema is the target schema, nil when the host did not give one
	// (a decoder may then derive it, as the Avro decoder does).
	Schema *arrowlite.Schema
	// Options are the decoder options, e.g. "avro_schema".
	Options map[string]string
}

// Decoder decodes one payload into one row.
type Decoder interface {
	// Decode appends at most one slot to each column builder (in schema
	// order); columns left untouched become null. On error the SDK drops
	// whatever the call appended, makes the row null in every column and
	// records the error text for that row.
	Decode(payload []byte, cols []*arrowlite.Builder) error
}

// Factory builds a decoder from its config and returns the schema the
// decoder produces (normally cfg.Schema).
type Factory func(cfg Config) (Decoder, *arrowlite.Schema, error)

// Module is one decoder instance: the ABI's state machine, independent of
// WebAssembly. The wasip1 exports drive a single package-level Module.
type Module struct {
	factory Factory
	dec     Decoder
	schema  *arrowlite.Schema // decoder schema
	out     *arrowlite.Schema // decoder schema + ErrorColumn
	cols    []*arrowlite.Builder
	all     []*arrowlite.Builder // cols + error builder
	errs    *arrowlite.Builder
	w       arrowlite.BatchWriter
}

// NewModule returns a module that builds its decoder with f.
func NewModule(f Factory) *Module { return &Module{factory: f} }

// Schema is the decoder's output schema (without ErrorColumn), nil before Init.
func (m *Module) Schema() *arrowlite.Schema { return m.schema }

// Init parses a pg_init config and builds the decoder.
func (m *Module) Init(config []byte) error {
	if m.factory == nil {
		return errors.New("no decoder registered (call sdk.Register from an init function)")
	}
	schemaIPC, opts, err := DecodeConfig(config)
	if err != nil {
		return err
	}
	cfg := Config{Options: opts}
	if len(schemaIPC) > 0 {
		if cfg.Schema, err = arrowlite.ReadSchema(schemaIPC); err != nil {
			return err
		}
	}
	dec, schema, err := m.factory(cfg)
	if err != nil {
		return err
	}
	if schema == nil {
		return errors.New("decoder returned no schema")
	}
	for _, f := range schema.Fields {
		if f.Name == ErrorColumn {
			return fmt.Errorf("schema field name %q is reserved", ErrorColumn)
		}
		if err := f.Type.Validate(); err != nil {
			return fmt.Errorf("field %q: %w", f.Name, err)
		}
	}
	m.dec, m.schema = dec, schema
	m.out = &arrowlite.Schema{Metadata: schema.Metadata,
		Fields: append(append([]arrowlite.Field(nil), schema.Fields...),
			arrowlite.Field{Name: ErrorColumn, Nullable: true, Type: arrowlite.Utf8Type()})}
	m.cols = m.cols[:0]
	for _, f := range schema.Fields {
		m.cols = append(m.cols, arrowlite.NewBuilder(f.Type))
	}
	m.errs = arrowlite.NewBuilder(arrowlite.Utf8Type())
	m.all = append(append([]*arrowlite.Builder(nil), m.cols...), m.errs)
	return nil
}

// Decode decodes a pg_decode input (one batch of payloads) and returns the
// output Arrow IPC stream, valid until the next call.
func (m *Module) Decode(input []byte) ([]byte, error) {
	if m.dec == nil {
		return nil, errors.New("pg_decode before a successful pg_init")
	}
	n, err := countPayloads(input)
	if err != nil {
		return nil, err
	}
	for _, c := range m.all {
		c.Reset()
	}
	for i := 0; i < n; i++ {
		m.row(i, payload(input, i))
	}
	return m.w.Write(m.out, m.all, n)
}

// DecodeEach decodes n payloads, payload i given by at(i), and returns the
// column builders (the decoder's columns, then the ErrorColumn), n slots
// each, valid until the next call. It is Decode without the framing and
// the IPC output: a native host (the Go data plane) reads the builders'
// buffers directly (arrowlite.Builder.Layout).
func (m *Module) DecodeEach(n int, at func(i int) []byte) ([]*arrowlite.Builder, error) {
	if m.dec == nil {
		return nil, errors.New("decode before a successful init")
	}
	for _, c := range m.all {
		c.Reset()
	}
	for i := 0; i < n; i++ {
		m.row(i, at(i))
	}
	return m.all, nil
}

// OutputSchema is the schema of Decode's output: Schema plus ErrorColumn
// (nil before Init).
func (m *Module) OutputSchema() *arrowlite.Schema { return m.out }

// row decodes payload into row i; every column ends with i+1 slots.
func (m *Module) row(i int, p []byte) {
	err := m.call(p)
	if err == nil {
		for j, c := range m.cols {
			switch {
			case c.Len() == i:
				c.AppendNull()
			case c.Len() != i+1:
				err = fmt.Errorf("decoder appended %d values to column %q", c.Len()-i, m.schema.Fields[j].Name)
			}
		}
	}
	if err == nil {
		m.errs.AppendNull()
		return
	}
	for _, c := range m.cols {
		c.Truncate(i)
		c.AppendNull()
	}
	msg := err.Error()
	if msg == "" {
		msg = "decode error"
	}
	m.errs.AppendString(msg)
}

// call runs the decoder, turning a panic into a record error.
func (m *Module) call(p []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return m.dec.Decode(p, m.cols)
}

var registered Factory

// Register sets the factory used by the wasm exports. Call it from an init
// function of the decoder's main package: a c-shared wasip1 module runs
// package initialisers but never main.main.
func Register(f Factory) { registered = f }
