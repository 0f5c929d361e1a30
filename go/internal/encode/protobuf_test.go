package encode_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/encode"
)

const protoSource = `syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  int32 qty = 2;
  bool ok = 3;
  double score = 4;
  float ratio = 5;
  string note = 6;
  bytes blob = 7;
  enum Status { NEW = 0; DONE = 1; }
  Status status = 8;
  repeated string tags = 9;
  map<string, int64> props = 10;
  message Addr { string city = 1; int32 zip = 2; }
  Addr addr = 11;
  repeated Addr past = 12;
}
`

var protoInput = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ratio", Type: arrow.PrimitiveTypes.Float32},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "blob", Type: arrow.BinaryTypes.Binary},
	{Name: "status", Type: arrow.BinaryTypes.String},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	{Name: "props", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
	{Name: "addr", Type: addrType, Nullable: true},
	{Name: "past", Type: arrow.ListOf(addrType)},
}, nil)

const protoRows = `[
 {"id": 1, "qty": -3, "ok": true, "score": 1.5, "ratio": 0.25, "note": "héllo", "blob": "AAH/", "status": "DONE",
  "tags": ["a", "b"], "props": [{"key": "k", "value": 7}], "addr": {"city": "Oslo", "zip": 150},
  "past": [{"city": "Rome", "zip": 1}]},
 {"id": -9007199254740993, "qty": 5, "ok": false, "score": -2, "ratio": 3, "note": "x", "blob": "/w==", "status": "NEW",
  "tags": [], "props": [], "addr": {"city": "", "zip": 0}, "past": []}
]`

// Protobuf binary and canonical JSON decode, by the project's protobuf
// decoder, back to the input's values.
func TestProtobufRoundTrip(t *testing.T) {
	in := record(t, protoInput, protoRows)
	defer in.Release()
	for _, encoding := range []string{"BINARY", "JSON"} {
		t.Run(encoding, func(t *testing.T) {
			enc, err := encode.New(encode.SinkSchema{Type: "PROTOCOL_BUFFER", Encoding: encoding, Definition: protoSource, Revision: "r1", Name: "projects/p/schemas/s"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := enc.Encode(in, keepAttributes)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			payloads := out.Column(0).(*array.Binary)
			if encoding == "JSON" && !strings.HasPrefix(string(payloads.Value(0)), `{`) {
				t.Errorf("JSON payload %q", payloads.Value(0))
			}
			cfg := &decode.DecoderConfig{Format: "protobuf", TopicSchema: &decode.TopicSchema{Schema: "projects/p/schemas/s", Type: "PROTOCOL_BUFFER", RevisionID: "r1",
				Revisions: map[string]string{"r1": protoSource}}}
			dec, err := cfg.Open(context.Background(), nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer dec.Close()
			got, errs, err := dec.DecodeRouted(payloads, func(int) decode.Route { return decode.Route{MessageID: "m", Revision: "r1", Encoding: encoding} })
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			defer errs.Release()
			for i := range errs.Len() {
				if errs.IsValid(i) {
					t.Errorf("row %d: %s", i, errs.Value(i))
				}
			}
			g := recordJSON(t, got)
			for _, want := range []string{`"id":1,`, `"id":-9007199254740993`, `"status":"DONE"`, `"props":[{"key":"k","value":7}]`,
				`"addr":{"city":"Oslo","zip":150}`, `"past":[{"city":"Rome","zip":1}]`, `"note":"héllo"`, `"blob":"AAH/"`, `"tags":["a","b"]`, `"ratio":0.25`} {
				if !strings.Contains(g, want) {
					t.Errorf("decoded %s lacks %s", g, want)
				}
			}
		})
	}
}

func TestProtobufMisfits(t *testing.T) {
	enc, err := encode.New(encode.SinkSchema{Type: "PROTOCOL_BUFFER", Encoding: "BINARY", Definition: protoSource, Revision: "r1", Name: "projects/p/schemas/s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ fields, rows, want string }{
		{"id:utf8", `[{"id": "1"}]`, "column id has type utf8, which does not fit the schema's int64"},
		{"zz:int64", `[{"zz": 1}]`, "column zz (int64) is not a field of shop.Order"},
		{"status:utf8", `[{"status": "LOST"}]`, `row 0: column status is "LOST", not a value of enum shop.Order.Status`},
	} {
		name, typ, _ := strings.Cut(c.fields, ":")
		dt := map[string]arrow.DataType{"utf8": arrow.BinaryTypes.String, "int64": arrow.PrimitiveTypes.Int64}[typ]
		rec := record(t, arrow.NewSchema([]arrow.Field{{Name: name, Type: dt}}, nil), c.rows)
		out, err := enc.Encode(rec, keepAttributes)
		rec.Release()
		if err == nil {
			out.Release()
			t.Errorf("%s: no error, want %q", c.fields, c.want)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want %q", c.fields, err, c.want)
		}
	}
}
