package emulator

import (
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/pubsub-go/pubsub-go/go/internal/protoschema"
)

const userAvro = `{"type":"record","name":"User","namespace":"t","fields":[
 {"name":"id","type":"long"},{"name":"name","type":["null","string"]},
 {"name":"tags","type":{"type":"array","items":"string"},"default":[]},
 {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}}]}`

func TestTopicSchemaValidatesPublishesAndTagsMessages(t *testing.T) {
	f := start(t)
	conn := pubsubpb.NewSchemaServiceClient(f.conn)
	sc, err := conn.CreateSchema(f.ctx, &pubsubpb.CreateSchemaRequest{Parent: "projects/p", SchemaId: "user",
		Schema: &pubsubpb.Schema{Type: pubsubpb.Schema_AVRO, Definition: userAvro}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CreateSchema(f.ctx, &pubsubpb.CreateSchemaRequest{Parent: "projects/p", SchemaId: "bad",
		Schema: &pubsubpb.Schema{Type: pubsubpb.Schema_AVRO, Definition: `{"type":"nope"}`}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad schema: %v", err)
	}
	if _, err := f.pub.CreateTopic(f.ctx, &pubsubpb.Topic{Name: "projects/p/topics/top",
		SchemaSettings: &pubsubpb.SchemaSettings{Schema: sc.Name, Encoding: pubsubpb.Encoding_JSON}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sub.CreateSubscription(f.ctx, &pubsubpb.Subscription{Name: "projects/p/subscriptions/sub1", Topic: "projects/p/topics/top"}); err != nil {
		t.Fatal(err)
	}
	_, err = f.pub.Publish(f.ctx, &pubsubpb.PublishRequest{Topic: "projects/p/topics/top",
		Messages: []*pubsubpb.PubsubMessage{{Data: []byte(`{"id":"x"}`)}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("invalid message: %v", err)
	}
	if _, err := f.pub.Publish(f.ctx, &pubsubpb.PublishRequest{Topic: "projects/p/topics/top",
		Messages: []*pubsubpb.PubsubMessage{{Data: []byte(`{"id":1,"name":null,"kind":"A"}`)}}}); err != nil {
		t.Fatal(err)
	}
	got := f.pull(t, 10)
	if len(got) != 1 {
		t.Fatalf("got %d messages", len(got))
	}
	a := got[0].Message.Attributes
	if a["googclient_schemaname"] != sc.Name || a["googclient_schemarevisionid"] != sc.RevisionId || a["googclient_schemaencoding"] != "JSON" {
		t.Fatalf("attributes %v", a)
	}
}

func TestPublishCodecReadsWhatProtoWrites(t *testing.T) {
	in := &pubsubpb.PublishRequest{Topic: "projects/p/topics/top", Messages: []*pubsubpb.PubsubMessage{
		{Data: []byte("one"), Attributes: map[string]string{"a": "1", "b": ""}, OrderingKey: "k"},
		{Data: nil, Attributes: map[string]string{"only": "attrs"}},
	}}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out pubsubpb.PublishRequest
	if err := unmarshalPublish(b, &out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, &out) {
		t.Fatalf("got %v, want %v", &out, in)
	}
	if err := unmarshalPublish(b[:len(b)-3], &pubsubpb.PublishRequest{}); err == nil {
		t.Fatal("truncated request parsed")
	}
}

func TestProtoSchemaValidatesBinaryAndJSON(t *testing.T) {
	md, err := compileProto(`syntax = "proto3"; message Reading { int64 id = 1; string note = 2; }`)
	if err != nil {
		t.Fatal(err)
	}
	if err := protoschema.Validate(md, []byte(`{"id": "7", "note": "ok"}`), false); err != nil {
		t.Errorf("JSON: %v", err)
	}
	if err := protoschema.Validate(md, []byte(`{"id": "x"}`), false); err == nil {
		t.Error("JSON with a bad id passed")
	}
	if err := protoschema.Validate(md, []byte{0x08, 0x07, 0x12, 0x02, 'o', 'k'}, true); err != nil {
		t.Errorf("binary: %v", err)
	}
	if err := protoschema.Validate(md, []byte{0x12, 0x05, 'o'}, true); err == nil {
		t.Error("truncated binary passed")
	}
	if _, err := compileProto(`syntax = "proto3"; message A {} message B {}`); err == nil {
		t.Error("two top-level messages compiled")
	}
	if _, err := compileProto(`syntax = "proto3"; message A { nope x = 1; }`); err == nil {
		t.Error("an unknown type compiled")
	}
}
