package schemaagree_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/emulator"
	"github.com/pubsub-go/pubsub-go/go/internal/encode"
)

const avroUser = `{"type": "record", "name": "User", "namespace": "t", "fields": [
  {"name": "id", "type": "long"},
  {"name": "name", "type": ["null", "string"], "default": null},
  {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "home", "type": ["null", {"type": "record", "name": "Place", "fields": [
     {"name": "city", "type": "string"}]}], "default": null},
  {"name": "again", "type": ["null", "Place"], "default": null}]}`

const protoReading = `syntax = "proto3";
package t;
message Reading {
  message Place { string city = 1; }
  int64 id = 1;
  string note = 2;
  repeated string tags = 3;
  Place place = 4;
}`

// A schema vector: its definition, whether it is valid, and payloads with
// whether each is an instance of it.
type schemaVector struct {
	name, typ, def string
	valid          bool
	payloads       []payloadVector
}

type payloadVector struct {
	name, encoding string
	data           []byte
	valid          bool
}

// id=3 (zigzag 6); name branch 1, "hi"; kind 1 (B); tags one block of
// one "a", end; home branch 1, city "Oslo"; again branch 0 (null).
var avroBinary = []byte{6, 2, 4, 'h', 'i', 2, 2, 2, 'a', 0, 2, 8, 'O', 's', 'l', 'o', 0}

var vectors = []schemaVector{
	{name: "avro", typ: "AVRO", def: avroUser, valid: true, payloads: []payloadVector{
		{"binary", "BINARY", avroBinary, true},
		{"json", "JSON", []byte(`{"id": 7, "name": {"string": "x"}, "kind": "A", "tags": [], "home": {"t.Place": {"city": ""}}, "again": null}`), true},
		{"json short union branch name", "JSON", []byte(`{"id": 7, "name": null, "kind": "B", "tags": ["a"], "home": {"Place": {"city": "c"}}, "again": null}`), true},
		{"truncated binary", "BINARY", avroBinary[:5], false},
		{"binary with trailing bytes", "BINARY", append(append([]byte(nil), avroBinary...), 0), false},
		{"binary enum index out of range", "BINARY", []byte{6, 0, 4, 0, 0, 0}, false},
		{"json long as a string", "JSON", []byte(`{"id": "7", "name": null, "kind": "A", "tags": [], "home": null, "again": null}`), false},
		{"json unknown enum symbol", "JSON", []byte(`{"id": 7, "name": null, "kind": "C", "tags": [], "home": null, "again": null}`), false},
		{"json bare union value", "JSON", []byte(`{"id": 7, "name": "x", "kind": "A", "tags": [], "home": {"city": "c"}, "again": null}`), true},
		{"json union value of no branch", "JSON", []byte(`{"id": 7, "name": 5, "kind": "A", "tags": [], "home": null, "again": null}`), false},
		{"json required field missing", "JSON", []byte(`{"name": null, "kind": "A", "tags": [], "home": null, "again": null}`), false},
		{"json int out of range", "JSON", []byte(`{"id": 99999999999999999999, "name": null, "kind": "A", "tags": [], "home": null, "again": null}`), false},
	}},
	{name: "avro unknown type", typ: "AVRO", def: `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Nope"}]}`},
	{name: "avro union in a union", typ: "AVRO", def: `{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", ["int"]]}]}`},
	{name: "avro name defined twice", typ: "AVRO", def: `{"type": "record", "name": "R", "fields": [
	  {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
	  {"name": "b", "type": {"type": "enum", "name": "E", "symbols": ["Y"]}}]}`},
	{name: "avro not JSON", typ: "AVRO", def: `{"type": "record"`},
	{name: "proto", typ: "PROTOCOL_BUFFER", def: protoReading, valid: true, payloads: []payloadVector{
		// id=7, note "ok", tags ["a"], place {city "c"}.
		{"binary", "BINARY", []byte{0x08, 0x07, 0x12, 0x02, 'o', 'k', 0x1a, 0x01, 'a', 0x22, 0x03, 0x0a, 0x01, 'c'}, true},
		{"json", "JSON", []byte(`{"id": "7", "note": "ok", "tags": ["a"], "place": {"city": "c"}}`), true},
		{"truncated binary", "BINARY", []byte{0x12, 0x05, 'o'}, false},
		{"json id not a number", "JSON", []byte(`{"id": "x"}`), false},
		{"json unknown field", "JSON", []byte(`{"id": "7", "nope": 1}`), false},
	}},
	{name: "proto unknown type", typ: "PROTOCOL_BUFFER", def: `syntax = "proto3"; message A { nope x = 1; }`},
	{name: "proto syntax error", typ: "PROTOCOL_BUFFER", def: `syntax = "proto3"; message A { int64 id = ; }`},
}

// The decoder, the encoder and the emulator agree on every schema and
// payload; and what the encoder writes from a valid payload's decoded row,
// the emulator accepts and the decoder reads back to the same row.
func TestDecoderEncoderAndEmulatorAgree(t *testing.T) {
	em := startEmulator(t)
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			emErr := em.checkSchema(v)
			_, encErr := encode.New(encode.SinkSchema{Type: v.typ, Encoding: "BINARY", Definition: v.def, Revision: "r1", Name: "projects/p/schemas/s"})
			dec, decErr := openDecoder(v)
			for who, err := range map[string]error{"emulator": emErr, "encoder": encErr, "decoder": decErr} {
				if (err == nil) != v.valid {
					t.Errorf("%s: schema valid=%v, err %v", who, v.valid, err)
				}
			}
			if dec == nil || encErr != nil || emErr != nil {
				return
			}
			defer dec.Close()
			for _, p := range v.payloads {
				t.Run(p.name, func(t *testing.T) {
					emErr := em.validate(v, p.encoding, p.data)
					rec, decErr := decodeOne(dec, p.encoding, p.data)
					for who, err := range map[string]error{"emulator": emErr, "decoder": decErr} {
						if (err == nil) != p.valid {
							t.Errorf("%s: payload valid=%v, err %v", who, p.valid, err)
						}
					}
					if rec == nil {
						return
					}
					defer rec.Release()
					roundTrip(t, em, dec, v, p, rec)
				})
			}
		})
	}
}

// roundTrip encodes the decoded row in both encodings and checks the
// emulator accepts it and the decoder reads the same row back.
func roundTrip(t *testing.T, em *emu, dec *decode.Decoder, v schemaVector, p payloadVector, rec arrow.RecordBatch) {
	t.Helper()
	want := rowJSON(t, rec)
	for _, encoding := range []string{"BINARY", "JSON"} {
		enc, err := encode.New(encode.SinkSchema{Type: v.typ, Encoding: encoding, Definition: v.def, Revision: "r1", Name: "projects/p/schemas/s"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := enc.Encode(rec, func(string) bool { return false })
		if err != nil {
			t.Fatalf("encoder, %s: %v", encoding, err)
		}
		payload := out.Column(int(out.NumCols()) - 1).(*array.Binary).Value(0)
		payload = append([]byte(nil), payload...)
		out.Release()
		if encoding == "BINARY" && p.encoding == "BINARY" && v.typ == "AVRO" && !bytes.Equal(payload, p.data) {
			t.Errorf("encoder wrote %v, the payload was %v", payload, p.data)
		}
		if err := em.validate(v, encoding, payload); err != nil {
			t.Errorf("emulator rejects the encoder's %s payload %q: %v", encoding, payload, err)
		}
		back, err := decodeOne(dec, encoding, payload)
		if err != nil {
			t.Errorf("decoder rejects the encoder's %s payload %q: %v", encoding, payload, err)
			continue
		}
		if got := rowJSON(t, back); got != want {
			t.Errorf("%s round trip: got %s, want %s", encoding, got, want)
		}
		back.Release()
	}
}

func openDecoder(v schemaVector) (*decode.Decoder, error) {
	format := map[string]string{"AVRO": "avro", "PROTOCOL_BUFFER": "protobuf"}[v.typ]
	cfg := &decode.DecoderConfig{Format: format, TopicSchema: &decode.TopicSchema{Schema: "projects/p/schemas/s", Type: v.typ, RevisionID: "r1",
		Revisions: map[string]string{"r1": v.def}}}
	return cfg.Open(context.Background(), nil, 1)
}

// decodeOne decodes one payload; a row the decoder fails is an error.
func decodeOne(dec *decode.Decoder, encoding string, data []byte) (arrow.RecordBatch, error) {
	b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	b.Append(data)
	payloads := b.NewBinaryArray()
	b.Release()
	defer payloads.Release()
	rec, errs, err := dec.DecodeRouted(payloads, func(int) decode.Route { return decode.Route{MessageID: "m", Revision: "r1", Encoding: encoding} })
	if err != nil {
		return nil, err
	}
	defer errs.Release()
	if errs.IsValid(0) {
		rec.Release()
		return nil, fmt.Errorf("%s", errs.Value(0))
	}
	return rec, nil
}

func rowJSON(t *testing.T, rec arrow.RecordBatch) string {
	t.Helper()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// emu is the embedded emulator's Schema service.
type emu struct {
	ctx    context.Context
	client pubsubpb.SchemaServiceClient
	n      int
}

func startEmulator(t *testing.T) *emu {
	t.Helper()
	e, err := emulator.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop() })
	conn, err := grpc.NewClient(e.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &emu{ctx: ctx, client: pubsubpb.NewSchemaServiceClient(conn)}
}

func pbSchema(v schemaVector) *pubsubpb.Schema {
	return &pubsubpb.Schema{Type: pubsubpb.Schema_Type(pubsubpb.Schema_Type_value[v.typ]), Definition: v.def}
}

func (e *emu) checkSchema(v schemaVector) error {
	e.n++
	_, err := e.client.CreateSchema(e.ctx, &pubsubpb.CreateSchemaRequest{Parent: "projects/p", SchemaId: fmt.Sprintf("s%d", e.n), Schema: pbSchema(v)})
	return err
}

func (e *emu) validate(v schemaVector, encoding string, data []byte) error {
	_, err := e.client.ValidateMessage(e.ctx, &pubsubpb.ValidateMessageRequest{Parent: "projects/p",
		SchemaSpec: &pubsubpb.ValidateMessageRequest_Schema{Schema: pbSchema(v)},
		Message:    data, Encoding: pubsubpb.Encoding(pubsubpb.Encoding_value[encoding])})
	return err
}
