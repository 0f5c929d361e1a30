package publisher

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pubsub-go/pubsub-go/go/internal/encode"
)

const encodeTestSchema = `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"},
  {"name": "b", "type": ["null", "string"], "default": null}]}`

// With EncodeSchema, the record columns become the payload; attributes,
// ordering_key and the timestamp column keep their roles.
func TestPublishEncodesToTheTopicSchema(t *testing.T) {
	srv := fakeServer(t)
	cfg := testConfig(srv.Addr)
	cfg.EnableMessageOrdering = true
	cfg.TimestampAttribute, cfg.TimestampColumn = "ts", "event_time"
	cfg.EncodeSchema = &encode.SinkSchema{Type: "AVRO", Encoding: "JSON", Definition: encodeTestSchema, Revision: "r1", Name: "projects/p/schemas/s"}
	p := open(t, cfg)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ordering_key", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "event_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[
	  {"a": 1, "attributes": [{"key": "k", "value": "v"}], "b": "x", "ordering_key": "o", "event_time": "2026-01-01T00:00:00.001Z"},
	  {"a": 2, "attributes": null, "b": null, "ordering_key": null, "event_time": "2026-01-01T00:00:00Z"}]`))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, p, rec)
	flush(t, p)
	msgs := srv.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	// The two rows have different ordering keys, so they may be published in
	// either order; put the keyed one first.
	if msgs[0].OrderingKey == "" {
		msgs[0], msgs[1] = msgs[1], msgs[0]
	}
	if got := string(msgs[0].Data); got != `{"a":1,"b":{"string":"x"}}` {
		t.Errorf("payload 0 %s", got)
	}
	if got := string(msgs[1].Data); got != `{"a":2,"b":null}` {
		t.Errorf("payload 1 %s", got)
	}
	if msgs[0].Attributes["k"] != "v" || msgs[0].Attributes["ts"] != "1767225600001" || msgs[0].OrderingKey != "o" {
		t.Errorf("message 0 attributes %v, ordering key %q", msgs[0].Attributes, msgs[0].OrderingKey)
	}

	bad, _, _ := array.RecordFromJSON(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.BinaryTypes.String}, {Name: "event_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
	}, nil), strings.NewReader(`[{"a": "1", "event_time": 0}]`))
	defer bad.Release()
	err = p.Publish(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "column a has type utf8, which does not fit the schema's long") {
		t.Errorf("mismatch error %v", err)
	}
}

func TestEncodeSchemaIsValidated(t *testing.T) {
	cfg := testConfig("localhost:1")
	cfg.EncodeSchema = &encode.SinkSchema{Type: "AVRO", Encoding: "BINARY", Definition: `{"type": "record"`}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "encode_schema: schema") {
		t.Errorf("Validate: %v", err)
	}
}
