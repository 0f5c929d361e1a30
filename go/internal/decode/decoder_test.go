package decode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
)

func binaryArray(payloads ...string) *array.Binary {
	b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer b.Release()
	for _, p := range payloads {
		b.Append([]byte(p))
	}
	return b.NewBinaryArray()
}

var userSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

func newJSON(t *testing.T, alloc memory.Allocator, mut func(*DecoderConfig)) *Decoder {
	t.Helper()
	spec := DecoderConfig{Wasm: guestModule(t, "cmd/json"), Format: "json", Target: userSchema}
	if mut != nil {
		mut(&spec)
	}
	d, err := NewDecoder(context.Background(), spec, alloc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDecodeJSONIntoCMemory(t *testing.T) {
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	d := newJSON(t, mem, func(s *DecoderConfig) { s.instances = 1 })
	if !d.Schema().Equal(userSchema) {
		t.Fatalf("schema %s", d.Schema())
	}
	in := binaryArray(
		`{"id": 1, "name": "ann", "tags": ["a", "b"], "at": "2024-05-06T07:08:09.5Z"}`,
		`not json`,
		`{"id": 2}`,
	)
	defer in.Release()
	rec, errs, err := d.Decode(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if mem.CurrentAlloc() == 0 {
		t.Fatal("decoded buffers are not in the given allocator")
	}
	// A second batch on the same (only) instance overwrites its memory;
	// the first batch must not alias it.
	in2 := binaryArray(`{"id": 99, "name": "zzzzzzzzzzzzzzzz", "tags": ["x", "y", "z"]}`)
	defer in2.Release()
	rec2, errs2, err := d.Decode(context.Background(), in2)
	if err != nil {
		t.Fatal(err)
	}
	rec2.Release()
	errs2.Release()

	if got := rec.Column(0).(*array.Int64).Value(0); got != 1 {
		t.Errorf("id = %d", got)
	}
	if got := rec.Column(1).(*array.String).Value(0); got != "ann" {
		t.Errorf("name = %q", got)
	}
	tags := rec.Column(2).(*array.List)
	if got := tags.ListValues().(*array.String).Value(1); got != "b" {
		t.Errorf("tag = %q", got)
	}
	want := time.Date(2024, 5, 6, 7, 8, 9, 5e8, time.UTC).UnixMicro()
	if got := int64(rec.Column(3).(*array.Timestamp).Value(0)); got != want {
		t.Errorf("at = %d, want %d", got, want)
	}
	if !errs.IsNull(0) || errs.IsNull(1) || !errs.IsNull(2) {
		t.Errorf("error nulls: %v", errs)
	}
	if !rec.Column(0).IsNull(1) || rec.Column(0).(*array.Int64).Value(2) != 2 || !rec.Column(1).IsNull(2) {
		t.Errorf("rows 1-2: %v", rec.Column(0))
	}
	if msg := errs.Value(1); msg == "" {
		t.Error("empty error message")
	}
	rec.Release()
	errs.Release()
	d.Close()
	mem.AssertSize(t, 0)
}

func TestNullPayloadsDecodeAsEmpty(t *testing.T) {
	d := newJSON(t, memory.DefaultAllocator, nil)
	b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	b.Append([]byte(`{"id": 5}`))
	b.AppendNull()
	b.Append([]byte(`{"id": 6}`))
	in := b.NewBinaryArray()
	b.Release()
	defer in.Release()
	sliced := array.NewSlice(in, 1, 3).(*array.Binary)
	defer sliced.Release()
	rec, errs, err := d.Decode(context.Background(), sliced)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	defer errs.Release()
	ids := rec.Column(0).(*array.Int64)
	if rec.NumRows() != 2 || !ids.IsNull(0) || ids.Value(1) != 6 || errs.NullN() != 2 {
		t.Fatalf("rows %d ids %v errs %v", rec.NumRows(), ids, errs)
	}
}

func TestModuleCompiledOnce(t *testing.T) {
	path := guestModule(t, "cmd/json")
	newJSON(t, nil, nil) // make sure it is compiled
	before := engine.Compiles()
	for i := 0; i < 3; i++ {
		d, err := NewDecoder(context.Background(), DecoderConfig{Wasm: path, Target: userSchema}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	after := engine.Compiles()
	if after != before {
		t.Fatalf("compiled %d more times", after-before)
	}
}

func TestConcurrentDecodes(t *testing.T) {
	d := newJSON(t, nil, func(s *DecoderConfig) { s.instances = 2 })
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				in := binaryArray(fmt.Sprintf(`{"id": %d}`, g*100+i))
				rec, errs, err := d.Decode(context.Background(), in)
				in.Release()
				if err != nil {
					errc <- err
					return
				}
				if got := rec.Column(0).(*array.Int64).Value(0); got != int64(g*100+i) {
					errc <- fmt.Errorf("goroutine %d got id %d", g, got)
				}
				rec.Release()
				errs.Release()
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func TestBadConfigIsDecoderError(t *testing.T) {
	_, err := NewDecoder(context.Background(), DecoderConfig{Wasm: guestModule(t, "cmd/json")}, nil)
	if !errors.Is(err, ErrDecoder) {
		t.Fatalf("json without schema: %v", err)
	}
	_, err = NewDecoder(context.Background(), DecoderConfig{Wasm: guestModule(t, "cmd/json"), Target: userSchema,
		Options: map[string]string{"bogus": "1"}}, nil)
	if !errors.Is(err, ErrDecoder) || !strings.Contains(err.Error(), `unknown option "bogus"`) {
		t.Fatalf("unknown option: %v", err)
	}
	_, err = NewDecoder(context.Background(), DecoderConfig{Module: []byte("\x00asm garbage")}, nil)
	if !errors.Is(err, ErrDecoder) {
		t.Fatalf("garbage module: %v", err)
	}
}

func TestClosedDecoder(t *testing.T) {
	d := newJSON(t, nil, nil)
	d.Close()
	in := binaryArray(`{}`)
	defer in.Release()
	if _, _, err := d.Decode(context.Background(), in); !errors.Is(err, ErrClosed) {
		t.Fatalf("decode after close: %v", err)
	}
}
