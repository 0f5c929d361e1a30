// Package native runs the built-in decoders (json, avro, protobuf) in the
// host, natively: the engine of a decoder config that names a built-in
// format and no module. They are our own, trusted code: no sandbox, no
// memory cap or time limit.
package native

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/abi"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/avrodec"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/jsondec"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/protodec"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// The data plane runs the built-in decoders natively (no WebAssembly, no
// IPC), from the same source the .wasm builds are made of
// (wasm-decoders/jsondec, avrodec, protodec, through the sdk's Module), so
// both give identical batches and errors. The sandbox exists for modules
// users bring.

// builtins are the built-in formats: the one list of them (cmd/contract
// hands it to Python).
var builtins = map[string]sdk.Factory{"json": jsondec.New, "avro": avrodec.New, "protobuf": protodec.New}

// IsBuiltin reports whether format names a built-in decoder.
func IsBuiltin(format string) bool { return builtins[format] != nil }

// Builtins are the built-in formats, sorted.
func Builtins() []string {
	out := make([]string, 0, len(builtins))
	for f := range builtins {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// List is Builtins joined with sep, for messages.
func List(sep string) string { return strings.Join(Builtins(), sep) }

// Route is what one message's attributes say about its payload; empty
// fields: the attribute is missing.
type Route struct {
	MessageID string
	Revision  string
	Encoding  string // BINARY or JSON
}

// Router is a decoder that decodes each payload by its Route (a topic's
// schema revisions: decode.TopicSchema); Pool.Decode sets the route of
// each row before it decodes that row.
type Router interface {
	sdk.Decoder
	SetRoute(Route)
}

// Pool keeps initialised modules for reuse: a Module holds column
// builders whose memory is reused from batch to batch.
type Pool struct {
	Factory sdk.Factory // the decoder; New sets the built-in one
	config  []byte
	idle    chan nativeModule
}

// nativeModule is a module and the decoder its factory made (a Router
// takes each row's Route from it).
type nativeModule struct {
	m   *sdk.Module
	dec sdk.Decoder
}

// New is a pool of at most n idle modules of the built-in format, each
// initialised with config (pg_init's, sdk.EncodeConfig).
func New(format string, config []byte, n int) (*Pool, error) {
	f := builtins[format]
	if f == nil {
		return nil, fmt.Errorf("%w: no built-in decoder %q (built-ins: %s)", engine.ErrDecoder, format, List(", "))
	}
	return &Pool{Factory: f, config: config, idle: make(chan nativeModule, n)}, nil
}

func (p *Pool) get() (nativeModule, error) {
	select {
	case m := <-p.idle:
		return m, nil
	default:
	}
	var nm nativeModule
	nm.m = sdk.NewModule(func(cfg sdk.Config) (sdk.Decoder, *arrowlite.Schema, error) {
		d, s, err := p.Factory(cfg)
		nm.dec = d
		return d, s, err
	})
	if err := nm.m.Init(p.config); err != nil {
		return nativeModule{}, fmt.Errorf("%w: %v", engine.ErrDecoder, err)
	}
	return nm, nil
}

func (p *Pool) put(m nativeModule) {
	select {
	case p.idle <- m:
	default: // more modules than the bound: let the GC have this one
	}
}

// SchemaIPC is the output schema (with ErrorColumn) as the .wasm build
// writes it: an empty batch's IPC stream, read by abi.ReadIPC.
func (p *Pool) SchemaIPC() ([]byte, error) {
	m, err := p.get()
	if err != nil {
		return nil, err
	}
	defer p.put(m)
	out, err := m.m.Decode(sdk.EncodeInput(nil))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrDecoder, err)
	}
	return slices.Clone(out), nil
}

// Decode runs the built-in decoder over payloads (route, if not nil, gives
// a Router each row's Route) and copies its builders
// into arrays of full's types allocated with mem. A panic outside the
// per-row recovery of sdk.Module (a bug) fails the batch as engine.ErrCrashed
// instead of the process.
func (p *Pool) Decode(payloads *array.Binary, route func(int) Route, full *arrow.Schema, mem memory.Allocator) (cols []arrow.Array, err error) {
	nm, err := p.get()
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			for _, c := range cols {
				c.Release()
			}
			cols, err = nil, fmt.Errorf("%w: built-in decoder panic: %v\n%s", engine.ErrCrashed, r, debug.Stack())
			return // m is dropped: its state is unknown
		}
		p.put(nm)
	}()
	n := payloads.Len()
	rt, _ := nm.dec.(Router)
	if route != nil && rt == nil {
		return nil, fmt.Errorf("%w: routed decoding without a topic schema", engine.ErrDecoder)
	}
	builders, err := nm.m.DecodeEach(n, func(i int) []byte {
		if rt != nil {
			r := Route{}
			if route != nil {
				r = route(i)
			}
			rt.SetRoute(r)
		}
		if payloads.IsNull(i) {
			return nil
		}
		v := payloads.Value(i)
		return v[:len(v):len(v)] // as in the .wasm: a payload never extends into the next
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrDecoder, err)
	}
	if len(builders) != full.NumFields() {
		return nil, fmt.Errorf("%w: %d columns for schema %s", engine.ErrCrashed, len(builders), full)
	}
	for j, b := range builders {
		data, err := toData(b, full.Field(j).Type, mem)
		if err != nil {
			for _, c := range cols {
				c.Release()
			}
			return nil, fmt.Errorf("%w: column %q: %v", engine.ErrCrashed, full.Field(j).Name, err)
		}
		cols = append(cols, array.MakeFromData(data))
		data.Release()
	}
	return cols, nil
}

// toData copies a builder (and its children) into an ArrayData of type t
// with buffers from mem: one copy per buffer, nothing aliases Go memory
// (batches leave through the C data interface).
func toData(b *arrowlite.Builder, t arrow.DataType, mem memory.Allocator) (arrow.ArrayData, error) {
	l := b.Layout()
	var bufs []*memory.Buffer
	var children []arrow.ArrayData
	release := func() {
		for _, x := range bufs {
			if x != nil {
				x.Release()
			}
		}
		for _, c := range children {
			c.Release()
		}
	}
	if t.ID() == arrow.NULL {
		return array.NewData(t, l.Len, []*memory.Buffer{nil}, nil, l.Len, 0), nil
	}
	bufs = append(bufs, abi.CopyBuf(mem, l.Valid))
	switch tt := t.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		bufs = append(bufs, offsetsBuf(mem, l.Starts, l.End), abi.CopyBuf(mem, l.Data))
	case *arrow.StructType:
		if len(b.Children) != tt.NumFields() {
			release()
			return nil, fmt.Errorf("struct has %d children, type %s", len(b.Children), t)
		}
		for i, c := range b.Children {
			d, err := toData(c, tt.Field(i).Type, mem)
			if err != nil {
				release()
				return nil, err
			}
			children = append(children, d)
		}
	case arrow.ListLikeType: // list, map
		if len(b.Children) != 1 {
			release()
			return nil, fmt.Errorf("list has %d children, type %s", len(b.Children), t)
		}
		bufs = append(bufs, offsetsBuf(mem, l.Starts, l.End))
		d, err := toData(b.Children[0], tt.Elem(), mem)
		if err != nil {
			release()
			return nil, err
		}
		children = append(children, d)
	case arrow.FixedWidthDataType:
		if want := abi.FixedBytes(tt, l.Len); len(l.Data) != want {
			release()
			return nil, fmt.Errorf("%d value bytes for %d slots of %s", len(l.Data), l.Len, t)
		}
		bufs = append(bufs, abi.CopyBuf(mem, l.Data))
	default:
		release()
		return nil, fmt.Errorf("type %s is not supported", t)
	}
	if len(l.Starts) != 0 && len(l.Starts) != l.Len {
		release()
		return nil, errors.New("offsets do not match the slots")
	}
	d := array.NewData(t, l.Len, bufs, children, l.Nulls, 0)
	release()
	return d, nil
}

// offsetsBuf writes starts plus the final end as Arrow's int32 offsets.
func offsetsBuf(mem memory.Allocator, starts []int32, end int32) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(4 * (len(starts) + 1))
	out := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), len(starts)+1)
	copy(out, starts)
	out[len(starts)] = end
	return buf
}
