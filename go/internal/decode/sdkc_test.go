package decode

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/pubsub-go/pubsub-go/go/internal/cmem"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/abi"
)

// C decoders (wasm-decoders/sdk-c, decoder ABI 2), built like every test
// module by guestModule (build_test.go).

var vpcLines = []string{
	"2 123456789010 eni-1235b8ca123456789 172.31.16.139 172.31.16.21 20641 22 6 20 4249 1418530010 1418530070 ACCEPT OK",
	"2 123456789010 eni-1235b8ca123456789 - - - - - - - 1431280876 1431280934 - NODATA",
	"2 1 eni-1 1.1.1.1 2.2.2.2 x 22 6 1 1 1 2 REJECT OK", // not a number
	"2 1 eni-1 1.1.1.1 2.2.2.2 1 22 6 1 1 1 2 REJECT",    // too few fields
	"", // empty
	"2 1 eni-1 1.1.1.1 2.2.2.2 99999999999 22 6 1 1 1 2 A OK", // int32 overflow
	"  2\t1 eni-1 1.1.1.1 2.2.2.2 1 22 6 1 1 1 2 A OK  ",      // other spacing
}

func decodeWith(t *testing.T, spec DecoderConfig, lines []string) (arrow.RecordBatch, *array.String) {
	t.Helper()
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	d, err := NewDecoder(context.Background(), spec, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := binaryArray(lines...)
	defer in.Release()
	rec, errs, err := d.Decode(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return rec, errs
}

// The C port of the example decoder (ABI 2) gives the Go one's (ABI 1)
// batches: derived schema and a target subset in another order; values,
// nulls and which rows fail.
func TestCVpcflowEqualsGoVpcflow(t *testing.T) {
	subset := arrow.NewSchema([]arrow.Field{
		{Name: "bytes", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "srcaddr", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "start", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "srcport", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	goWasm, cWasm := guestModule(t, "examples/vpcflow"), guestModule(t, "examples/vpcflow-c/vpcflow.c")
	for _, target := range []*arrow.Schema{nil, subset} {
		goRec, goErrs := decodeWith(t, DecoderConfig{Wasm: goWasm, Target: target}, vpcLines)
		cRec, cErrs := decodeWith(t, DecoderConfig{Wasm: cWasm, Target: target}, vpcLines)
		sameOutput(t, goRec, nullMessages(goErrs), cRec, nullMessages(cErrs))
		for i := range vpcLines {
			if goErrs.IsValid(i) != cErrs.IsValid(i) {
				t.Errorf("line %d: Go error %q, C error %q", i, goErrs.Value(i), cErrs.Value(i))
			}
		}
		if goErrs.NullN() != 3 {
			t.Errorf("want 4 failed lines, got %d", goErrs.Len()-goErrs.NullN())
		}
		goRec.Release()
		goErrs.Release()
		cRec.Release()
		cErrs.Release()
	}
}

// nullMessages keeps which rows failed but not the text (the ports word
// their messages differently).
func nullMessages(errs *array.String) *array.String {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < errs.Len(); i++ {
		if errs.IsValid(i) {
			b.Append("error")
		} else {
			b.AppendNull()
		}
	}
	return b.NewStringArray()
}

func TestCDecoderRejectsWrongTypes(t *testing.T) {
	bad := arrow.NewSchema([]arrow.Field{{Name: "srcport", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	_, err := NewDecoder(context.Background(), DecoderConfig{Wasm: guestModule(t, "examples/vpcflow-c/vpcflow.c"), Target: bad, TimeoutMs: 60_000}, nil)
	if err == nil || !strings.Contains(err.Error(), "wrong type") {
		t.Fatalf("want the module's error, got %v", err)
	}
}

// Random lines from tokens that stress both ports' edges (signs, range
// limits, Unicode spaces, too few or many fields): the C port fails
// exactly the lines the Go one fails and decodes the rest identically.
func TestCVpcflowEqualsGoVpcflowOnRandomLines(t *testing.T) {
	tokens := []string{"2", "-", "+5", "-7", "0", "007", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "2147483647", "2147483648", "-2147483649", "x", "1e3",
		"eni-1", "ACCEPT", "é", "1418530010", "--", "+", ""}
	spaces := []string{" ", "  ", "\t", "\u00a0", "\u0085", "\r\n", "\x01"}
	r := rand.New(rand.NewPCG(1, 2))
	lines := make([]string, 3000)
	for i := range lines {
		n := 12 + r.IntN(4)
		var b strings.Builder
		for j := 0; j < n; j++ {
			if j > 0 || r.IntN(4) == 0 {
				b.WriteString(spaces[r.IntN(len(spaces))])
			}
			b.WriteString(tokens[r.IntN(len(tokens))])
		}
		lines[i] = b.String()
	}
	goWasm, cWasm := guestModule(t, "examples/vpcflow"), guestModule(t, "examples/vpcflow-c/vpcflow.c")
	goRec, goErrs := decodeWith(t, DecoderConfig{Wasm: goWasm}, lines)
	defer goRec.Release()
	defer goErrs.Release()
	cRec, cErrs := decodeWith(t, DecoderConfig{Wasm: cWasm}, lines)
	defer cRec.Release()
	defer cErrs.Release()
	for i := range lines {
		if goErrs.IsValid(i) != cErrs.IsValid(i) {
			t.Fatalf("line %q: Go error %q, C error %q", lines[i], goErrs.Value(i), cErrs.Value(i))
		}
	}
	ge, ce := nullMessages(goErrs), nullMessages(cErrs)
	defer ge.Release()
	defer ce.Release()
	sameOutput(t, goRec, ge, cRec, ce)
	if ok := goErrs.NullN(); ok == 0 || ok == len(lines) {
		t.Fatalf("%d of %d lines decoded: the generator tests nothing", ok, len(lines))
	}
}

// A module's broken output layout fails its batch as ErrCrashed (the
// arrays are validated before anyone reads them), the instance is
// replaced, and the next batch decodes.
func TestBrokenLayoutsAreCrashes(t *testing.T) {
	d, err := NewDecoder(context.Background(), DecoderConfig{Wasm: guestModule(t, "internal/testguests/badlayout/badlayout.c"),
		Format: "badlayout", instances: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	decode := func(fault string) (arrow.RecordBatch, *array.String, error) {
		in := binaryArray(fault, "xy")
		defer in.Release()
		return d.Decode(context.Background(), in)
	}
	good := func() {
		rec, errs, err := decode("g")
		if err != nil {
			t.Fatalf("good batch: %v", err)
		}
		defer rec.Release()
		defer errs.Release()
		if v := rec.Column(0).(*array.String); v.Value(0) != "ab" || v.Value(1) != "cd" || errs.NullN() != 2 {
			t.Fatalf("good batch: %v %v", rec, errs)
		}
	}
	good()
	for fault, want := range map[string]string{"o": "outside guest memory", "b": "offset", "n": "too few nodes",
		"r": "rows", "x": "more nodes or buffers", "c": "null count"} {
		_, _, err := decode(fault)
		if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), want) {
			t.Errorf("fault %s: %v, want ErrCrashed mentioning %q", fault, err, want)
		}
		good()
	}
}

// The C SDK's output layout for every flat type it supports, against the
// same rows built with arrow-go: values, nulls (appended or left
// untouched), rows that fail (the decoder's error, or two values in one
// column, which the SDK turns into one) becoming null in every column,
// over batches of several sizes through one instance (its buffers reused).
func TestCSDKLayoutOfEveryType(t *testing.T) {
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	defer mem.AssertSize(t, 0)
	d, err := NewDecoder(context.Background(), DecoderConfig{Wasm: guestModule(t, "internal/testguests/alltypes/alltypes.c")}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, rows := range []int{1000, 7, 64, 1, 0, 333} {
		payloads := make([]string, rows)
		b := array.NewRecordBuilder(memory.DefaultAllocator, d.Schema())
		eb := array.NewStringBuilder(memory.DefaultAllocator)
		for i := range payloads {
			ops := make([]byte, 10)
			dup := false
			for c := range ops {
				ops[c] = ".nvvvd"[rng.IntN(6)]
				if ops[c] == 'd' && rng.IntN(4) > 0 {
					ops[c] = 'v'
				}
				dup = dup || ops[c] == 'd'
			}
			fail := rng.IntN(10) == 0
			if fail {
				ops = append(ops, 'e')
			}
			v := rng.Int64N(1<<40) - 1<<39
			payloads[i] = fmt.Sprintf("%s %d", ops, v)
			switch { // the decoder's own error first
			case fail:
				eb.Append("row error")
			case dup:
				eb.Append("decoder appended more than one value to a column")
			default:
				eb.AppendNull()
			}
			for c := range 10 {
				fb := b.Field(c)
				if dup || fail || ops[c] == '.' || ops[c] == 'n' {
					fb.AppendNull()
					continue
				}
				switch fb := fb.(type) {
				case *array.BooleanBuilder:
					fb.Append(v&1 == 1)
				case *array.Int8Builder:
					fb.Append(int8(v))
				case *array.Int16Builder:
					fb.Append(int16(v))
				case *array.Int32Builder:
					fb.Append(int32(v))
				case *array.Int64Builder:
					fb.Append(v)
				case *array.Float32Builder:
					fb.Append(float32(float64(v) / 4))
				case *array.Float64Builder:
					fb.Append(float64(v) / 4)
				case *array.StringBuilder:
					fb.Append(fmt.Sprint(v))
				case *array.BinaryBuilder:
					fb.Append([]byte(payloads[i]))
				case *array.TimestampBuilder:
					fb.Append(arrow.Timestamp(v))
				default:
					t.Fatalf("column %d: unexpected builder %T", c, fb)
				}
			}
		}
		want, wantErrs := b.NewRecordBatch(), eb.NewStringArray()
		b.Release()
		eb.Release()
		in := binaryArray(payloads...)
		got, errs, err := d.Decode(context.Background(), in)
		in.Release()
		if err != nil {
			t.Fatal(err)
		}
		for c := range 10 {
			if !array.Equal(got.Column(c), want.Column(c)) {
				t.Errorf("%d rows, column %s differs", rows, want.ColumnName(c))
			}
		}
		for i := range rows {
			if errs.IsNull(i) != wantErrs.IsNull(i) || errs.Value(i) != wantErrs.Value(i) {
				t.Errorf("%d rows: row %d (%q): error %q, want %q", rows, i, payloads[i], errs.Value(i), wantErrs.Value(i))
				break
			}
		}
		got.Release()
		errs.Release()
		want.Release()
		wantErrs.Release()
	}
}

// The output slab comes uninitialised from cmem (a reused mapping holds an
// earlier batch's bytes): the padding after each buffer, which consumers
// may read (as Arrow allows) and IPC writers copy, must still be zero.
func TestOutputPaddingHoldsNoEarlierBatchBytes(t *testing.T) {
	alloc := cmem.New(cmem.DefaultMaxCached, time.Minute)
	d, err := NewDecoder(context.Background(), DecoderConfig{Wasm: guestModule(t, "examples/vpcflow-c/vpcflow.c")}, alloc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	batch := func(width int) []string {
		lines := make([]string, 3000) // text columns well past cmem.LargeMin together
		for i := range lines {
			w := strings.Repeat("Z", width+i%7)
			lines[i] = fmt.Sprintf("2 %s %s %s %s 1 2 6 1 1 1 2 %s %s", w, w, w, w, w, w)
		}
		return lines
	}
	for i, width := range []int{12, 11} { // the second batch's slab reuses the first's mapping
		in := binaryArray(batch(width)...)
		rec, errs, err := d.Decode(context.Background(), in)
		in.Release()
		if err != nil {
			t.Fatal(err)
		}
		if errs.NullN() != errs.Len() {
			t.Fatalf("batch %d: rows failed: %v", i, errs)
		}
		for c, col := range rec.Columns() {
			for b, buf := range col.Data().Buffers() {
				if buf == nil {
					continue
				}
				v := buf.Bytes()
				pad := v[len(v):min(cap(v), (len(v)+abi.SlabAlign-1)&^(abi.SlabAlign-1))]
				for _, x := range pad {
					if x != 0 {
						t.Fatalf("batch %d, column %d, buffer %d: padding holds %q", i, c, b, pad)
					}
				}
			}
		}
		rec.Release()
		errs.Release()
	}
}
