package avrodec

import (
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/internal/ipccheck"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// Semantics are covered end to end by testdata/decoders/vectors (payloads
// written by fastavro) through both hosts; these tests pin schema
// handling and the decoder's safety properties.

const testSchema = `{"type": "record", "name": "R", "namespace": "ns", "fields": [
  {"name": "id", "type": "long"},
  {"name": "nulls", "type": {"type": "array", "items": "null"}},
  {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "v", "type": ["null", "string"]}]}},
  {"name": "again", "type": "Inner"},
  {"name": "qualified", "type": ["null", "ns.Inner"]},
  {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "int"}}},
  {"name": "u", "type": ["string", "int", "boolean", "null"]},
  {"name": "dec", "type": {"type": "fixed", "name": "D", "size": 3, "logicalType": "decimal", "precision": 6, "scale": 1}},
  {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
  {"name": "bad_logical", "type": {"type": "int", "logicalType": "decimal"}}
]}`

func module(t testing.TB, avroSchema string, target *arrowlite.Schema) (*sdk.Module, error) {
	var schemaIPC []byte
	if target != nil {
		schemaIPC = arrowlite.EncodeSchema(target)
	}
	m := sdk.NewModule(New)
	return m, m.Init(sdk.EncodeConfig(schemaIPC, map[string]string{"avro_schema": avroSchema}))
}

func decode(t *testing.T, m *sdk.Module, payloads ...[]byte) arrow.RecordBatch {
	t.Helper()
	out, err := m.Decode(sdk.EncodeInput(payloads))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ipccheck.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// zz appends the zigzag varint of v.
func zz(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func str(b []byte, s string) []byte { return append(zz(b, int64(len(s))), s...) }

// record encodes one datum of testSchema.
func record(id int64) []byte {
	b := zz(nil, id)
	b = zz(b, -2)           // nulls: a block of 2 items given with its byte size...
	b = zz(b, 0)            // ...of 0 bytes
	b = zz(b, 0)            // end of array
	b = str(zz(b, 1), "in") // inner.v = "in"
	b = zz(b, 0)            // again.v = null
	b = zz(b, 0)            // qualified = null
	b = zz(b, 1)            // m: one entry
	b = zz(zz(zz(str(b, "k"), 1), 5), 0)
	b = zz(b, 0)                    // end of map
	b = zz(zz(b, 1), -3)            // u = int -3
	b = append(b, 0xff, 0xff, 0x85) // dec = -123 -> -12.3
	b = zz(b, 1)                    // e = B
	b = zz(b, 1_500_000_123)        // ts = 1.500000123 s
	return zz(b, 9)                 // bad_logical: plain int
}

func TestDerivedSchemaAndValues(t *testing.T) {
	m, err := module(t, testSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := decode(t, m, record(42), append(record(1), 0))
	defer rec.Release()
	want := "id: int64; nulls: list<element: null, nullable>; inner: struct<v: utf8 nullable>; again: struct<v: utf8 nullable>; " +
		"qualified: struct<v: utf8 nullable>; m: map<utf8, list<element: int32>, items_non_nullable>; " +
		"u: struct<member0: utf8 nullable, member1: int32 nullable, member2: bool nullable>; dec: decimal(6, 1); e: utf8; " +
		"ts: timestamp[us, tz=UTC]; bad_logical: int32; __error: utf8"
	var got []string
	for _, f := range rec.Schema().Fields() {
		got = append(got, f.Name+": "+f.Type.String())
	}
	if strings.Join(got, "; ") != want {
		t.Fatalf("schema:\n%s\nwant\n%s", strings.Join(got, "; "), want)
	}
	errs := rec.Column(11).(*array.String)
	if errs.IsValid(0) || !strings.Contains(errs.Value(1), "trailing bytes") {
		t.Fatalf("errors: %v", errs)
	}
	if got := rec.Column(1).(*array.List).ListValues().Len(); got != 2 {
		t.Errorf("nulls array has %d items", got)
	}
	u := rec.Column(6).(*array.Struct)
	if !u.Field(0).IsNull(0) || u.Field(1).(*array.Int32).Value(0) != -3 {
		t.Errorf("union member: %v", u)
	}
	if got := rec.Column(7).(*array.Decimal128).Value(0).BigInt().Int64(); got != -123 {
		t.Errorf("decimal unscaled = %d", got)
	}
	if got := rec.Column(9).(*array.Timestamp).Value(0); got != 1_500_000 {
		t.Errorf("timestamp-nanos as micros = %d", got)
	}
	if got := rec.Column(8).(*array.String).Value(0); got != "B" {
		t.Errorf("enum = %q", got)
	}
}

func TestSchemaErrors(t *testing.T) {
	recursive := `{"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]}`
	for name, c := range map[string]struct {
		avro   string
		target *arrowlite.Schema
		want   string
	}{
		"recursive":  {recursive, nil, "recursive reference"},
		"not record": {`"int"`, nil, "must be a record"},
		"unknown":    {`{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Nope"}]}`, nil, `unknown avro type "Nope"`},
		"bad json":   {`{"type":`, nil, "not valid JSON"},
		"mismatch": {`{"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]}`,
			&arrowlite.Schema{Fields: []arrowlite.Field{{Name: "a", Type: arrowlite.IntType(32, true)}}}, "cannot be decoded into int32"},
		"decimal scale": {`{"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}}]}`,
			&arrowlite.Schema{Fields: []arrowlite.Field{{Name: "a", Type: arrowlite.DecimalType(5, 3)}}}, "cannot be decoded"},
	} {
		_, err := module(t, c.avro, c.target)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestHostileCountsAreBounded(t *testing.T) {
	m, err := module(t, `{"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}},
		{"name": "b", "type": {"type": "array", "items": "long"}}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	huge := zz(zz(nil, 1<<40), 0)           // 2^40 nulls
	many := zz(zz(zz(nil, 0), 1<<40), 0)    // 2^40 longs in 3 bytes
	minInt := zz(zz(zz(nil, 0), -1<<63), 0) // block count MinInt64
	rec := decode(t, m, huge, many, minInt, zz(zz(nil, 0), 0))
	defer rec.Release()
	errs := rec.Column(2).(*array.String)
	for i, want := range []string{"exceeds the datum", "exceeds the datum", "invalid avro block count"} {
		if !strings.Contains(errs.Value(i), want) {
			t.Errorf("row %d: %q, want %q", i, errs.Value(i), want)
		}
	}
	if errs.IsValid(3) {
		t.Errorf("empty arrays rejected: %s", errs.Value(3))
	}
}

// Length prefixes claiming 2^31 items or bytes (arrays of zero-size and
// of sized items, maps, strings, bytes, and many blocks of zero-size
// items) fail their row cleanly, and decoding them allocates about what
// the few bytes given are worth, not what they claim.
func TestLengthPrefixesAreBoundedByTheInput(t *testing.T) {
	m, err := module(t, `{"type": "record", "name": "R", "fields": [
		{"name": "nulls", "type": {"type": "array", "items": "null"}},
		{"name": "longs", "type": {"type": "array", "items": "long"}},
		{"name": "m", "type": {"type": "map", "values": "null"}},
		{"name": "s", "type": "string"}, {"name": "b", "type": "bytes"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	const claim = 1 << 31
	empty := func() []byte { return zz(zz(zz(nil, 0), 0), 0) } // nulls, longs, m: empty; s and b follow
	manyBlocks := []byte(nil)
	for i := 0; i < 200; i++ { // 200 blocks of 2^16 nulls: 13M items in 600 bytes
		manyBlocks = zz(manyBlocks, 1<<16)
	}
	rows := []struct {
		payload []byte
		want    string
	}{
		{zz(nil, claim), "zero-size items exceeds the datum"},
		{zz(zz(nil, 0), claim), "exceeds the datum"},
		{zz(zz(zz(nil, 0), 0), claim), "exceeds the datum"},
		{zz(empty(), claim), "truncated"},
		{zz(str(empty(), ""), claim), "truncated"},
		{manyBlocks, "zero-size items exceeds the datum"},
		{str(zz(zz(zz(zz(nil, 100), 0), 0), 0), ""), ""}, // 100 nulls in one byte still decode
	}
	payloads := make([][]byte, len(rows))
	for i, r := range rows {
		payloads[i] = append(r.payload, 0) // b: empty (or trailing)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := decode(t, m, payloads...)
	runtime.ReadMemStats(&after)
	defer rec.Release()
	errs := rec.Column(int(rec.NumCols()) - 1).(*array.String)
	for i, r := range rows {
		switch {
		case r.want == "" && errs.IsValid(i):
			t.Errorf("row %d: %q, want it decoded", i, errs.Value(i))
		case r.want != "" && !strings.Contains(errs.Value(i), r.want):
			t.Errorf("row %d: %q, want %q", i, errs.Value(i), r.want)
		}
	}
	if lo, hi := rec.Column(0).(*array.List).ValueOffsets(6); hi-lo != 100 {
		t.Errorf("row 6 has %d nulls, want 100", hi-lo)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("decoding %d short payloads allocated %d MiB", len(rows), got>>20)
	}
}

func TestFitsPrecision(t *testing.T) {
	for _, c := range []struct {
		lo   uint64
		hi   int64
		p    int32
		want bool
	}{
		{999, 0, 3, true}, {1000, 0, 3, false}, {^uint64(998), -1, 3, true}, {^uint64(999), -1, 3, false},
		{0, 1, 19, false}, {0, 1, 20, true},
	} {
		if got := fitsPrecision(c.lo, c.hi, c.p); got != c.want {
			t.Errorf("fitsPrecision(%d, %d, %d) = %v", c.lo, c.hi, c.p, got)
		}
	}
}

// FuzzAvroDecode feeds arbitrary datums for a schema with every Avro type:
// the decoder must never panic or spin, and its output must be valid.
func FuzzAvroDecode(f *testing.F) {
	f.Add(record(7))
	f.Add(record(-1)[:10])
	f.Add([]byte{})
	f.Add(zz(nil, 1<<62))
	m, err := module(f, testSchema, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := m.Decode(sdk.EncodeInput([][]byte{payload, record(5)}))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ipccheck.Read(out)
		if err != nil {
			t.Fatalf("invalid output: %v", err)
		}
		defer rec.Release()
		errs := rec.Column(int(rec.NumCols()) - 1).(*array.String)
		if errs.IsValid(0) && strings.HasPrefix(errs.Value(0), "decoder panic") {
			t.Fatalf("panic: %s", errs.Value(0))
		}
		if errs.IsValid(1) || rec.Column(0).(*array.Int64).Value(1) != 5 {
			t.Fatalf("a bad row disturbed the next one: %v", errs)
		}
	})
}
