package decode

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
)

// The shared conformance vectors (testdata/decoders/vectors, format in
// testdata/decoders/make_vectors.py) through the Go host. With
// PUBSUB_GO_CONFORMANCE_OUT set, each result is also written there as an
// IPC stream (decoded columns + __error) for the Python host's test to
// compare byte for byte in content.

type vector struct {
	Format         string            `json:"format"`
	Schema         []json.RawMessage `json:"schema"`
	ExpectedSchema []json.RawMessage `json:"expected_schema"`
	Options        map[string]string `json:"options"`
	Payloads       []string          `json:"payloads"`
	PayloadsHex    []string          `json:"payloads_hex"`
	Expected       []map[string]any  `json:"expected"`
	Errors         []*string         `json:"errors"`
}

func TestConformanceVectors(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/decoders/vectors/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	outDir := os.Getenv("PUBSUB_GO_CONFORMANCE_OUT")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var v vector
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			// The .wasm build in wazero, and the same code natively (what
			// schema mode runs for format=json|avro): both must meet the
			// vector, and give identical batches and errors.
			rec, errs := runVector(t, &v, false)
			defer rec.Release()
			defer errs.Release()
			checkVector(t, &v, rec, errs)
			nrec, nerrs := runVector(t, &v, true)
			defer nrec.Release()
			defer nerrs.Release()
			checkVector(t, &v, nrec, nerrs)
			sameOutput(t, rec, errs, nrec, nerrs)
			if outDir != "" {
				writeResult(t, filepath.Join(outDir, name+".arrows"), rec, errs)
				writeResult(t, filepath.Join(outDir, name+".native.arrows"), nrec, nerrs)
			}
		})
	}
}

func wasmFor(t testing.TB, format string) string {
	if dir := os.Getenv("PUBSUB_GO_WASM_DIR"); dir != "" {
		return filepath.Join(dir, format+".wasm")
	}
	return guestModule(t, "cmd/"+format)
}

// sameOutput fails unless two decoders' batches and row errors are equal
// in schema (metadata included), values and validity.
func sameOutput(t testing.TB, rec arrow.RecordBatch, errs *array.String, rec2 arrow.RecordBatch, errs2 *array.String) {
	t.Helper()
	if !rec.Schema().Equal(rec2.Schema()) || !reflect.DeepEqual(rec.Schema().Metadata(), rec2.Schema().Metadata()) {
		t.Fatalf("schemas differ:\n%s\n%s", rec.Schema(), rec2.Schema())
	}
	for i := range int(rec.NumCols()) {
		// Exact, except that NaN equals NaN (ApproxEqual with no tolerance).
		if !array.ApproxEqual(rec.Column(i), rec2.Column(i), array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
			t.Fatalf("column %q differs:\n%v\n%v", rec.Schema().Field(i).Name, rec.Column(i), rec2.Column(i))
		}
	}
	if !array.Equal(errs, errs2) {
		t.Fatalf("row errors differ:\n%v\n%v", errs, errs2)
	}
}

func runVector(t *testing.T, v *vector, native bool) (arrow.RecordBatch, *array.String) {
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	spec := DecoderConfig{Format: v.Format, Options: v.Options, TimeoutMs: 60_000}
	if !native { // else, without a module, the built-in decoder
		spec.Wasm = wasmFor(t, v.Format)
	}
	if v.Schema != nil {
		spec.Target = schemaOf(t, v.Schema)
	}
	d, err := NewDecoder(context.Background(), spec, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v.ExpectedSchema != nil {
		if want := schemaOf(t, v.ExpectedSchema); !d.Schema().Equal(want) {
			t.Fatalf("derived schema\n%s\nwant\n%s", d.Schema(), want)
		}
	}
	b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	for _, p := range v.Payloads {
		b.Append([]byte(p))
	}
	for _, h := range v.PayloadsHex {
		p, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		b.Append(p)
	}
	in := b.NewBinaryArray()
	b.Release()
	defer in.Release()
	rec, errs, err := d.Decode(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return rec, errs
}

func checkVector(t *testing.T, v *vector, rec arrow.RecordBatch, errs *array.String) {
	if int(rec.NumRows()) != len(v.Expected) {
		t.Fatalf("%d rows, want %d", rec.NumRows(), len(v.Expected))
	}
	for i, want := range v.Expected {
		got := map[string]any{}
		for j, f := range rec.Schema().Fields() {
			got[f.Name] = canon(rec.Column(j), i)
		}
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("row %d:\n got %s\nwant %s", i, g, w)
		}
		switch {
		case v.Errors[i] == nil && errs.IsValid(i):
			t.Errorf("row %d: unexpected error %q", i, errs.Value(i))
		case v.Errors[i] != nil && (errs.IsNull(i) || !strings.Contains(errs.Value(i), *v.Errors[i])):
			t.Errorf("row %d: error %q, want one containing %q", i, errs.Value(i), *v.Errors[i])
		}
	}
}

// normalize maps JSON numbers and Go numbers to comparable float64 or
// int64 values so that expected and got compare with DeepEqual.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return normalize(f)
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	}
	return v
}

// canon renders value i of a as the vectors' canonical JSON value.
func canon(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return c.Value(i)
	case *array.Int8:
		return int64(c.Value(i))
	case *array.Int16:
		return int64(c.Value(i))
	case *array.Int32:
		return int64(c.Value(i))
	case *array.Int64:
		return c.Value(i)
	case *array.Float32:
		return canonFloat(float64(c.Value(i)))
	case *array.Float64:
		return canonFloat(c.Value(i))
	case *array.String:
		return c.Value(i)
	case *array.Binary:
		return hex.EncodeToString(c.Value(i))
	case *array.Date32:
		return c.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		return int64(c.Value(i))
	case *array.Decimal128:
		n := c.Value(i).BigInt()
		return decimalString(n, c.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Map:
		start, end := c.ValueOffsets(i)
		keys, items := c.Keys(), c.Items()
		out := []any{}
		for j := int(start); j < int(end); j++ {
			out = append(out, []any{canon(keys, j), canon(items, j)})
		}
		return out
	case *array.List:
		start, end := c.ValueOffsets(i)
		out := []any{}
		for j := int(start); j < int(end); j++ {
			out = append(out, canon(c.ListValues(), j))
		}
		return out
	case *array.Struct:
		out := map[string]any{}
		st := c.DataType().(*arrow.StructType)
		for j := 0; j < c.NumField(); j++ {
			out[st.Field(j).Name] = canon(c.Field(j), i)
		}
		return out
	case *array.Null:
		return nil
	}
	return fmt.Sprintf("unsupported %s", a.DataType())
}

func canonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

func decimalString(n *big.Int, scale int32) string {
	neg := n.Sign() < 0
	s := new(big.Int).Abs(n).String()
	for len(s) <= int(scale) {
		s = "0" + s
	}
	if scale > 0 {
		s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// schemaOf builds an Arrow schema from the vectors' schema notation.
func schemaOf(t testing.TB, fields []json.RawMessage) *arrow.Schema {
	t.Helper()
	var out []arrow.Field
	for _, raw := range fields {
		f, err := fieldOf(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return arrow.NewSchema(out, nil)
}

func fieldOf(raw json.RawMessage) (arrow.Field, error) {
	var f struct {
		Name     string          `json:"name"`
		Type     json.RawMessage `json:"type"`
		Nullable *bool           `json:"nullable"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return arrow.Field{}, err
	}
	dt, err := typeOf(f.Type)
	nullable := f.Nullable == nil || *f.Nullable
	return arrow.Field{Name: f.Name, Type: dt, Nullable: nullable}, err
}

var (
	decimalRE   = regexp.MustCompile(`^decimal\((\d+),(\d+)\)$`)
	timestampRE = regexp.MustCompile(`^timestamp\[(s|ms|us|ns)(?:,(.+))?\]$`)
)

func typeOf(raw json.RawMessage) (arrow.DataType, error) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		switch name {
		case "int8":
			return arrow.PrimitiveTypes.Int8, nil
		case "int16":
			return arrow.PrimitiveTypes.Int16, nil
		case "int32":
			return arrow.PrimitiveTypes.Int32, nil
		case "int64":
			return arrow.PrimitiveTypes.Int64, nil
		case "float32":
			return arrow.PrimitiveTypes.Float32, nil
		case "float64":
			return arrow.PrimitiveTypes.Float64, nil
		case "bool":
			return arrow.FixedWidthTypes.Boolean, nil
		case "string":
			return arrow.BinaryTypes.String, nil
		case "binary":
			return arrow.BinaryTypes.Binary, nil
		case "date32":
			return arrow.FixedWidthTypes.Date32, nil
		case "null":
			return arrow.Null, nil
		}
		if m := decimalRE.FindStringSubmatch(name); m != nil {
			p, _ := strconv.Atoi(m[1])
			s, _ := strconv.Atoi(m[2])
			return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}, nil
		}
		if m := timestampRE.FindStringSubmatch(name); m != nil {
			unit := map[string]arrow.TimeUnit{"s": arrow.Second, "ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond}[m[1]]
			return &arrow.TimestampType{Unit: unit, TimeZone: m[2]}, nil
		}
		return nil, fmt.Errorf("unknown type %q", name)
	}
	var c struct {
		List          json.RawMessage   `json:"list"`
		Item          string            `json:"item"`
		ItemNullable  *bool             `json:"item_nullable"`
		Map           []json.RawMessage `json:"map"`
		ValueNullable *bool             `json:"value_nullable"`
		Struct        []json.RawMessage `json:"struct"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	switch {
	case c.List != nil:
		et, err := typeOf(c.List)
		if err != nil {
			return nil, err
		}
		item := arrow.Field{Name: "item", Type: et, Nullable: c.ItemNullable == nil || *c.ItemNullable}
		if c.Item != "" {
			item.Name = c.Item
		}
		return arrow.ListOfField(item), nil
	case c.Map != nil:
		kt, err := typeOf(c.Map[0])
		if err != nil {
			return nil, err
		}
		vt, err := typeOf(c.Map[1])
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(kt, vt)
		m.SetItemNullable(c.ValueNullable == nil || *c.ValueNullable)
		return m, nil
	case c.Struct != nil:
		var fs []arrow.Field
		for _, r := range c.Struct {
			f, err := fieldOf(r)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		return arrow.StructOf(fs...), nil
	}
	return nil, fmt.Errorf("unknown type %s", raw)
}

// writeResult writes the decoded columns plus __error as an IPC stream.
func writeResult(t *testing.T, path string, rec arrow.RecordBatch, errs *array.String) {
	fields := append(append([]arrow.Field(nil), rec.Schema().Fields()...),
		arrow.Field{Name: ErrorColumn, Type: arrow.BinaryTypes.String, Nullable: true})
	md := rec.Schema().Metadata()
	sc := arrow.NewSchema(fields, &md)
	cols := append(append([]arrow.Array(nil), rec.Columns()...), errs)
	full := array.NewRecordBatch(sc, cols, rec.NumRows())
	defer full.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc))
	if err := w.Write(full); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
