package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
)

const (
	revV1 = `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}`
	revV2 = `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"},
	  {"name": "b", "type": ["null", "string"], "default": null}]}`
	revV3 = `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"},
	  {"name": "b", "type": ["null", "string"], "default": null}, {"name": "c", "type": "int", "default": 7}]}`
)

// Rows of one lot decode by their own revision and encoding into the
// reader revision's columns, in order; bad rows name message, revision
// and reason; a revision committed later is fetched once per process.
func TestTopicSchemaRoutesRowsByRevision(t *testing.T) {
	var fetches atomic.Int32
	// The revision cache lives for the process: a schema name of its own
	// keeps the count right when the test runs more than once (-count).
	schema := fmt.Sprintf("projects/p/schemas/routes-%d", time.Now().UnixNano())
	ts := &TopicSchema{Schema: schema, Type: "AVRO", RevisionID: "r2",
		Revisions: map[string]string{"r1": revV1, "r2": revV2},
		Fetch: func(_ context.Context, schema, rev string) (string, error) {
			fetches.Add(1)
			if rev == "r3" {
				return revV3, nil
			}
			return "", errors.New("NotFound: no such revision")
		}}
	cfg := &DecoderConfig{Format: "avro", TopicSchema: ts}
	routes := []Route{
		{MessageID: "m1", Revision: "r1", Encoding: "BINARY"}, {MessageID: "m2", Revision: "r2", Encoding: "JSON"}, {MessageID: "m3", Revision: "r3", Encoding: "BINARY"}, {MessageID: "m4", Revision: "", Encoding: ""},
		{MessageID: "m5", Revision: "gone", Encoding: "BINARY"}, {MessageID: "m6", Revision: "r2", Encoding: "BINARY"}, {MessageID: "m7", Revision: "r1", Encoding: "XML"}, {MessageID: "m8", Revision: "r2", Encoding: "BINARY"},
		{MessageID: "m9", Revision: "_deleted-schema-revision_", Encoding: "BINARY"},
	}
	payloads := binaryArray("\x02", `{"a": 2, "b": {"string": "x"}}`, "\x06\x02\x02y\x10", "\x02",
		"\x02", `{"a": 1}`, "\x02", "\x08\x00", "\x02")
	for round := 0; round < 2; round++ { // a second decoder: r3 comes from the process cache
		dec, err := cfg.Open(context.Background(), nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		rec, errs, err := dec.DecodeRouted(payloads, func(i int) Route { return routes[i] })
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := array.RecordToJSON(rec, &buf); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		for i, want := range map[int]string{0: `{"a":1,"b":null}`, 1: `{"a":2,"b":"x"}`, 2: `{"a":3,"b":"y"}`, 7: `{"a":4,"b":null}`} {
			if lines[i] != want || errs.IsValid(i) {
				t.Errorf("row %d: %s (error %q), want %s", i, lines[i], errs.Value(i), want)
			}
		}
		for i, want := range map[int]string{
			3: "message m4 has no googclient_schemarevisionid and googclient_schemaencoding attributes",
			4: "message m5, schema revision gone: unknown or deleted revision: NotFound",
			5: "message m6, schema revision r2, BINARY encoding: ",
			6: `message m7, schema revision r1: encoding "XML" is not BINARY or JSON`,
			8: "message m9, schema revision _deleted-schema-revision_: its revision was deleted after it was published",
		} {
			if !errs.IsValid(i) || !strings.Contains(errs.Value(i), want) {
				t.Errorf("row %d error %q, want %q", i, errs.Value(i), want)
			}
		}
		rec.Release()
		errs.Release()
		dec.Close()
	}
	// r3 once for the process; "gone" once per decoder (failures are not cached).
	if n := fetches.Load(); n != 3 {
		t.Errorf("%d fetches, want 3", n)
	}
}

func TestTopicSchemaConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  DecoderConfig
		want string
	}{
		{DecoderConfig{Format: "avro", TopicSchema: &TopicSchema{Type: "THRIFT"}}, "not supported"},
		{DecoderConfig{Wasm: "x.wasm", TopicSchema: &TopicSchema{Type: "AVRO"}}, "not decoder.wasm"},
		{DecoderConfig{Format: "avro", TopicSchema: &TopicSchema{Type: "AVRO", Schema: "s", RevisionID: "x"}}, "that revision's definition"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg.TopicSchema, err, c.want)
		}
	}
}

// A protobuf schema's revisions all decode with the reader revision's
// descriptor (by field number), in the encoding each message names.
func TestTopicSchemaProtobufRevisions(t *testing.T) {
	v1 := "syntax = \"proto3\";\npackage t;\nmessage Item {\n  int64 id = 1;\n  string name = 2;\n  message Sub { int32 x = 1; }\n}\n"
	v2 := "syntax = \"proto3\";\npackage t;\nmessage Item {\n  int64 id = 1;\n  string name = 2;\n  message Sub { int32 x = 1; }\n  optional string extra = 3;\n}\n"
	ts := &TopicSchema{Schema: "projects/p/schemas/s", Type: "PROTOCOL_BUFFER", RevisionID: "r2",
		Revisions: map[string]string{"r1": v1, "r2": v2}}
	cfg := &DecoderConfig{Format: "avro", TopicSchema: ts} // the schema's type decides the decoder
	dec, err := cfg.Open(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	routes := []Route{{MessageID: "m1", Revision: "r1", Encoding: "BINARY"}, {MessageID: "m2", Revision: "r2", Encoding: "JSON"}, {MessageID: "m3", Revision: "r9", Encoding: "BINARY"}}
	rec, errs, err := dec.DecodeRouted(binaryArray("\x08\x05\x12\x01a", `{"id": "7", "name": "b", "extra": "e"}`, "\x08\x01"),
		func(i int) Route { return routes[i] })
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	defer errs.Release()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if lines[0] != `{"extra":null,"id":5,"name":"a"}` || lines[1] != `{"extra":"e","id":7,"name":"b"}` {
		t.Errorf("rows: %v (errors %v)", lines, errs)
	}
	if !strings.Contains(errs.Value(2), "message m3, schema revision r9: revision r9 is not one the query started with") {
		t.Errorf("row 2 error %q", errs.Value(2))
	}
}
