package arrowlite

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// allTypes is a schema with every supported type, nested.
func allTypes() *Schema {
	return &Schema{
		Metadata: []KeyValue{{"origin", "test"}},
		Fields: []Field{
			{Name: "i8", Nullable: true, Type: IntType(8, true)},
			{Name: "u16", Nullable: true, Type: IntType(16, false)},
			{Name: "i32", Nullable: true, Type: IntType(32, true)},
			{Name: "i64", Type: IntType(64, true), Metadata: []KeyValue{{"k", "v"}}},
			{Name: "f32", Nullable: true, Type: Float32Type()},
			{Name: "f64", Nullable: true, Type: Float64Type()},
			{Name: "b", Nullable: true, Type: BoolType()},
			{Name: "s", Nullable: true, Type: Utf8Type()},
			{Name: "bin", Nullable: true, Type: BinaryType()},
			{Name: "d", Nullable: true, Type: Date32Type()},
			{Name: "ts", Nullable: true, Type: TimestampType(Microsecond, "UTC")},
			{Name: "ntz", Nullable: true, Type: TimestampType(Millisecond, "")},
			{Name: "dec", Nullable: true, Type: DecimalType(10, 2)},
			{Name: "n", Nullable: true, Type: NullType()},
			{Name: "l", Nullable: true, Type: ListType(Field{Name: "item", Nullable: true, Type: Utf8Type()})},
			{Name: "m", Nullable: true, Type: MapType(Utf8Type(), Field{Nullable: true, Type: IntType(64, true)})},
			{Name: "st", Nullable: true, Type: StructType(
				Field{Name: "x", Nullable: true, Type: IntType(32, true)},
				Field{Name: "y", Nullable: true, Type: ListType(Field{Name: "element", Nullable: true, Type: Float64Type()})},
			)},
		},
	}
}

// fill appends row i (every third row null where allowed).
func fill(cols []*Builder, i int) {
	null := i%3 == 2
	for j, c := range cols {
		if null && j != 3 {
			c.AppendNull()
			continue
		}
		switch j {
		case 0, 1, 2, 3, 9, 10, 11:
			c.AppendInt(int64(i*10 + j))
		case 4, 5:
			c.AppendFloat(float64(i) + 0.5)
		case 6:
			c.AppendBool(i%2 == 0)
		case 7:
			c.AppendString(strings.Repeat("é", i))
		case 8:
			c.AppendBytes([]byte{byte(i), 0})
		case 12:
			c.AppendDecimal(uint64(12345+i), 0)
		case 13:
			c.AppendNull()
		case 14:
			c.AppendList()
			for k := 0; k < i; k++ {
				c.Children[0].AppendString("v")
			}
			c.Children[0].AppendNull()
		case 15:
			c.AppendList()
			e := c.Children[0]
			e.AppendStruct()
			e.Children[0].AppendString("k")
			e.Children[1].AppendInt(int64(i))
		case 16:
			c.AppendStruct()
			c.Children[0].AppendInt(int64(i))
			c.Children[1].AppendList()
			c.Children[1].Children[0].AppendFloat(1.25)
		}
	}
}

func readStream(t *testing.T, b []byte) (*arrow.Schema, arrow.RecordBatch) {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatalf("arrow-go cannot read the stream: %v", err)
	}
	if !r.Next() {
		t.Fatalf("no batch: %v", r.Err())
	}
	rec := r.RecordBatch()
	rec.Retain()
	if r.Next() {
		t.Fatal("more than one batch")
	}
	return r.Schema(), rec
}

func TestWriteReadByArrowGo(t *testing.T) {
	s := allTypes()
	cols := make([]*Builder, len(s.Fields))
	for i, f := range s.Fields {
		cols[i] = NewBuilder(f.Type)
	}
	var w BatchWriter
	// Write twice with the same builders: reuse must not leak old rows.
	for _, rows := range []int{7, 5} {
		for _, c := range cols {
			c.Reset()
		}
		for i := 0; i < rows; i++ {
			fill(cols, i)
		}
		out, err := w.Write(s, cols, rows)
		if err != nil {
			t.Fatal(err)
		}
		schema, rec := readStream(t, out)
		defer rec.Release()
		if rec.NumRows() != int64(rows) || rec.NumCols() != int64(len(s.Fields)) {
			t.Fatalf("got %dx%d", rec.NumRows(), rec.NumCols())
		}
		walk(t, rec)
		want := `schema:
  fields: 17
    - i8: type=int8, nullable
    - u16: type=uint16, nullable
    - i32: type=int32, nullable
    - i64: type=int64
     metadata: ["k": "v"]
    - f32: type=float32, nullable
    - f64: type=float64, nullable
    - b: type=bool, nullable
    - s: type=utf8, nullable
    - bin: type=binary, nullable
    - d: type=date32, nullable
    - ts: type=timestamp[us, tz=UTC], nullable
    - ntz: type=timestamp[ms], nullable
    - dec: type=decimal(10, 2), nullable
    - n: type=null, nullable
    - l: type=list<item: utf8, nullable>, nullable
    - m: type=map<utf8, int64, items_nullable>, nullable
    - st: type=struct<x: int32 nullable, y: list<element: float64, nullable> nullable>, nullable
  metadata: ["origin": "test"]`
		if got := schema.String(); got != want {
			t.Fatalf("schema:\n%s\nwant:\n%s", got, want)
		}
		st := rec.Column(16).(*array.Struct)
		if got := st.Field(1).(*array.List).ListValues().(*array.Float64).Value(0); got != 1.25 {
			t.Fatalf("nested float = %v", got)
		}
		if got := rec.Column(7).(*array.String).Value(4); got != "éééé" {
			t.Fatalf("string = %q", got)
		}
		if rec.Column(0).NullN() != rows/3 {
			t.Fatalf("null count %d", rec.Column(0).NullN())
		}
		if got := rec.Column(12).(*array.Decimal128).Value(1).LowBits(); got != 12346 {
			t.Fatalf("decimal = %d", got)
		}
	}
}

func TestSchemaRoundTrip(t *testing.T) {
	s := allTypes()
	got, err := ReadSchema(EncodeSchema(s))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := schemaString(got), schemaString(s); g != w {
		t.Fatalf("round trip:\n%s\nwant\n%s", g, w)
	}
	// And a schema written by arrow-go.
	as := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"}},
	}, nil)
	var buf bytes.Buffer
	iw := ipc.NewWriter(&buf, ipc.WithSchema(as))
	iw.Close()
	got, err = ReadSchema(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if g := schemaString(got); g != "a?: map<string, int32>; t: timestamp[ns, tz=Europe/Paris]" {
		t.Fatalf("arrow-go schema read as %s", g)
	}
}

func schemaString(s *Schema) string {
	var parts []string
	for _, f := range s.Fields {
		n := f.Name
		if f.Nullable {
			n += "?"
		}
		parts = append(parts, n+": "+f.Type.String())
	}
	return strings.Join(parts, "; ")
}

func TestReadSchemaRejectsGarbage(t *testing.T) {
	good := EncodeSchema(allTypes())
	for i := 0; i < len(good); i += 3 {
		bad := append([]byte(nil), good[:i]...)
		_, _ = ReadSchema(bad) // must not panic
		flipped := append([]byte(nil), good...)
		flipped[i] ^= 0xA5
		_, _ = ReadSchema(flipped)
	}
	if _, err := ReadSchema([]byte("not a schema at all")); err == nil {
		t.Fatal("garbage accepted")
	}
}

func TestTruncateRollsBackNested(t *testing.T) {
	s := allTypes()
	cols := make([]*Builder, len(s.Fields))
	for i, f := range s.Fields {
		cols[i] = NewBuilder(f.Type)
	}
	for i := 0; i < 4; i++ {
		fill(cols, i)
	}
	for _, c := range cols {
		c.Truncate(2)
	}
	fill(cols, 2) // null row
	fill(cols, 1)
	var w BatchWriter
	out, err := w.Write(s, cols, 4)
	if err != nil {
		t.Fatal(err)
	}
	_, rec := readStream(t, out)
	defer rec.Release()
	walk(t, rec)
	l := rec.Column(14).(*array.List)
	if got := l.ListValues().Len(); got != 1+2+0+2 {
		t.Fatalf("list child length %d", got)
	}
	if rec.Column(2).NullN() != 1 || !rec.Column(2).IsNull(2) {
		t.Fatalf("nulls after truncate: %d", rec.Column(2).NullN())
	}
	if got := rec.Column(2).(*array.Int32).Value(3); got != 12 {
		t.Fatalf("row 3 = %d", got)
	}
	// Bools true, false, null, false: stale bits of dropped rows must be gone.
	if got := bitCount(cols[6].data); got != 1 {
		t.Fatalf("bool bits %08b", cols[6].data)
	}
}

// walk renders every value, which panics on inconsistent offsets or lengths.
func walk(t *testing.T, rec arrow.RecordBatch) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("invalid batch: %v", r)
		}
	}()
	for _, c := range rec.Columns() {
		_ = c.String()
	}
}

// A row given up half-way leaves a child longer than its parent accounts
// for (a map entry's key in, its value and the entry not); truncating to
// the rows before it drops that too, so the next row's entries line up.
func TestTruncateDropsAHalfWrittenChild(t *testing.T) {
	m := NewBuilder(MapType(Utf8Type(), Field{Type: IntType(64, true)}))
	entries := m.Children[0]
	m.AppendList() // row 0: {"a": 1}
	entries.Children[0].AppendString("a")
	entries.Children[1].AppendInt(1)
	entries.AppendStruct()
	m.AppendList() // row 1, given up after its first key
	entries.Children[0].AppendString("b")
	m.Truncate(1)
	if m.Len() != 1 || entries.Len() != 1 || entries.Children[0].Len() != 1 || entries.Children[1].Len() != 1 {
		t.Fatalf("lengths map %d entries %d key %d value %d", m.Len(), entries.Len(),
			entries.Children[0].Len(), entries.Children[1].Len())
	}
	m.Truncate(1) // nothing beyond: a no-op
	if m.Len() != 1 || entries.Children[0].Len() != 1 {
		t.Fatal("a second truncation changed the builder")
	}
}
