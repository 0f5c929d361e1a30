package encode_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/encode"
)

// Every type the sink maps, nested, with nulls.
const allTypes = `{"type": "record", "name": "Order", "namespace": "shop", "fields": [
  {"name": "id", "type": "long"},
  {"name": "qty", "type": "int"},
  {"name": "ok", "type": "boolean"},
  {"name": "score", "type": "double"},
  {"name": "ratio", "type": "float"},
  {"name": "note", "type": ["null", "string"], "default": null},
  {"name": "blob", "type": "bytes"},
  {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "DONE"]}},
  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "props", "type": {"type": "map", "values": ["null", "long"]}},
  {"name": "addr", "type": ["null", {"type": "record", "name": "Addr", "fields": [
     {"name": "city", "type": "string"},
     {"name": "zip", "type": ["null", "int"], "default": null}]}]},
  {"name": "extra", "type": ["null", "string"], "default": null}
]}`

var addrType = arrow.StructOf(
	arrow.Field{Name: "city", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true})

var inputSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ratio", Type: arrow.PrimitiveTypes.Float32},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "blob", Type: arrow.BinaryTypes.Binary},
	{Name: "status", Type: arrow.BinaryTypes.String},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	{Name: "props", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
	{Name: "addr", Type: addrType, Nullable: true},
	{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
}, nil)

const inputRows = `[
 {"id": 1, "qty": -3, "ok": true, "score": 1.5, "ratio": 0.25, "note": "héllo \"q\" <&>", "blob": "AAH/",
  "status": "NEW", "at": "2026-01-02T03:04:05.123456Z", "day": "2026-01-02", "price": "-12345.67",
  "tags": ["a", "b"], "props": [{"key": "k", "value": 7}, {"key": "n", "value": null}],
  "addr": {"city": "Oslo", "zip": 150}, "attributes": [{"key": "x", "value": "y"}]},
 {"id": -9007199254740993, "qty": 0, "ok": false, "score": -0.0, "ratio": 3, "note": null, "blob": "",
  "status": "DONE", "at": "1969-12-31T23:59:59.999999Z", "day": "1960-05-06", "price": "0.01",
  "tags": [], "props": [], "addr": null, "attributes": null},
 {"id": 3, "qty": 2147483647, "ok": true, "score": 1e300, "ratio": -1, "note": "", "blob": "/w==",
  "status": "NEW", "at": "2026-01-02T03:04:05Z", "day": "2026-01-02", "price": "99999999.99",
  "tags": ["x"], "props": [{"key": "", "value": 0}], "addr": {"city": "", "zip": null}, "attributes": []}
]`

func record(t *testing.T, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func keepAttributes(name string) bool { return name == "attributes" }

// The encoded payloads decode, by the project's Avro decoder, back to the
// input's values, in both encodings.
func TestAvroRoundTrip(t *testing.T) {
	in := record(t, inputSchema, inputRows)
	defer in.Release()
	for _, encoding := range []string{"BINARY", "JSON"} {
		t.Run(encoding, func(t *testing.T) {
			enc, err := encode.New(encode.SinkSchema{Type: "AVRO", Encoding: encoding, Definition: allTypes, Revision: "r1", Name: "projects/p/schemas/s"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := enc.Encode(in, keepAttributes)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			if got := out.Schema().String(); !strings.Contains(got, "attributes") || !strings.Contains(got, "payload: type=binary") || out.NumCols() != 2 {
				t.Fatalf("encoded batch schema %s, want attributes + payload", got)
			}
			payloads := out.Column(1).(*array.Binary)
			if encoding == "JSON" && !strings.HasPrefix(string(payloads.Value(0)), `{"id":1,"qty":-3,"ok":true,"score":1.5,"ratio":0.25,"note":{"string":"héllo \"q\" <&>"},"blob":"\u0000\u0001ÿ"`) {
				t.Errorf("JSON payload %s", payloads.Value(0))
			}
			got := decodeAvro(t, payloads, encoding)
			defer got.Release()
			want := withoutColumn(t, in, "attributes")
			// "extra" has no column: every row takes its default, null.
			g := recordJSON(t, got)
			if strings.Count(g, `"extra":null,`) != 3 {
				t.Errorf("the field without a column is not null in every row: %s", g)
			}
			if g, w := strings.ReplaceAll(g, `"extra":null,`, ""), recordJSON(t, want); g != w {
				t.Errorf("decoded\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func decodeAvro(t *testing.T, payloads *array.Binary, encoding string) arrow.RecordBatch {
	t.Helper()
	cfg := &decode.DecoderConfig{Format: "avro", TopicSchema: &decode.TopicSchema{Schema: "projects/p/schemas/s", Type: "AVRO", RevisionID: "r1",
		Revisions: map[string]string{"r1": allTypes}}}
	dec, err := cfg.Open(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	rec, errs, err := dec.DecodeRouted(payloads, func(int) decode.Route { return decode.Route{MessageID: "m", Revision: "r1", Encoding: encoding} })
	if err != nil {
		t.Fatal(err)
	}
	defer errs.Release()
	for i := range errs.Len() {
		if errs.IsValid(i) {
			t.Errorf("row %d: %s", i, errs.Value(i))
		}
	}
	return rec
}

func withoutColumn(t *testing.T, rec arrow.RecordBatch, name string) arrow.RecordBatch {
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range rec.Schema().Fields() {
		if f.Name != name {
			fields, cols = append(fields, f), append(cols, rec.Column(i))
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

func recordJSON(t *testing.T, rec arrow.RecordBatch) string {
	t.Helper()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// Columns that do not fit fail before any row is encoded, naming the
// column, its type and the schema's; a bad value names its row.
func TestAvroMisfits(t *testing.T) {
	const schema = `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"},
	  {"name": "s", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
	  {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}},
	  {"name": "n", "type": {"type": "record", "name": "N", "fields": [{"name": "b", "type": "int"}]}}]}`
	ok := []arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}},
		{Name: "n", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int32})},
	}
	with := func(i int, f arrow.Field) *arrow.Schema {
		fs := append([]arrow.Field(nil), ok...)
		if i < len(fs) {
			fs[i] = f
		} else {
			fs = append(fs, f)
		}
		return arrow.NewSchema(fs, nil)
	}
	for _, c := range []struct {
		name   string
		schema *arrow.Schema
		rows   string
		want   string
	}{
		{"type", with(0, arrow.Field{Name: "a", Type: arrow.BinaryTypes.String}), `[{"a": "1", "s": "X", "d": "1.00", "n": {"b": 1}}]`,
			"does not fit schema projects/p/schemas/s revision r1: column a has type utf8, which does not fit the schema's long"},
		{"nested type", with(3, arrow.Field{Name: "n", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Float64})}), `[{"a": 1, "s": "X", "d": "1.00", "n": {"b": 1}}]`,
			"column n.b has type float64, which does not fit the schema's int"},
		{"scale", with(2, arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 5, Scale: 1}}), `[{"a": 1, "s": "X", "d": "1.0", "n": {"b": 1}}]`,
			"the scales differ (1, the schema's 2)"},
		{"extra column", with(4, arrow.Field{Name: "zz", Type: arrow.PrimitiveTypes.Int64}), `[{"a": 1, "s": "X", "d": "1.00", "n": {"b": 1}, "zz": 1}]`,
			"column zz (int64) is not a field of R; the fields are [a s d n]"},
		{"missing column", arrow.NewSchema(ok[:3], nil), `[{"a": 1, "s": "X", "d": "1.00"}]`,
			`no column n for field "n" of R (type record N), which has no default`},
		{"payload", with(4, arrow.Field{Name: "payload", Type: arrow.BinaryTypes.Binary}), `[{"a": 1, "s": "X", "d": "1.00", "n": {"b": 1}, "payload": ""}]`,
			`column "payload" does not go with schemaFrom=topic`},
		{"null", arrow.NewSchema(ok, nil), `[{"a": 1, "s": "X", "d": "1.00", "n": {"b": 1}}, {"a": null, "s": "X", "d": "1.00", "n": {"b": 1}}]`,
			"row 1: column a is null but the schema's long is not nullable"},
		{"symbol", arrow.NewSchema(ok, nil), `[{"a": 1, "s": "Y", "d": "1.00", "n": {"b": 1}}]`,
			`row 0: column s is "Y", not a symbol of enum E [X]`},
	} {
		for _, encoding := range []string{"BINARY", "JSON"} {
			t.Run(c.name+"/"+encoding, func(t *testing.T) {
				enc, err := encode.New(encode.SinkSchema{Type: "AVRO", Encoding: encoding, Definition: schema, Revision: "r1", Name: "projects/p/schemas/s"})
				if err != nil {
					t.Fatal(err)
				}
				rec := record(t, c.schema, c.rows)
				defer rec.Release()
				out, err := enc.Encode(rec, keepAttributes)
				if err == nil {
					out.Release()
					t.Fatalf("no error, want %q", c.want)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("error %q, want %q", err, c.want)
				}
			})
		}
	}
}

func TestNewRejectsUnsupported(t *testing.T) {
	for _, c := range []struct {
		s    encode.SinkSchema
		want string
	}{
		{encode.SinkSchema{Type: "AVRO", Encoding: "XML", Definition: allTypes}, `encoding "XML": expected BINARY or JSON`},
		{encode.SinkSchema{Type: "PROTOCOL_BUFFER", Encoding: "BINARY", Definition: "syntax = \"proto3\";"}, "the .proto source defines no message"},
		{encode.SinkSchema{Type: "AVRO", Encoding: "JSON", Definition: `"long"`}, "the sink writes rows to record schemas"},
		{encode.SinkSchema{Type: "AVRO", Encoding: "JSON", Definition: `{`}, "the Avro schema is not JSON"},
	} {
		if _, err := encode.New(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.s, err, c.want)
		}
	}
}
