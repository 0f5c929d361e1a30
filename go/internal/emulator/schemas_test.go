package emulator

import (
	"regexp"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// Revision ids have the service's form: 8 lower-case hex digits.
func TestSchemaRevisionIDsAreEightHexDigits(t *testing.T) {
	f := start(t)
	sc := pubsubpb.NewSchemaServiceClient(f.conn)
	form := regexp.MustCompile(`^[0-9a-f]{8}$`)
	s, err := sc.CreateSchema(f.ctx, &pubsubpb.CreateSchemaRequest{Parent: "projects/p", SchemaId: "users",
		Schema: &pubsubpb.Schema{Type: pubsubpb.Schema_AVRO, Definition: userAvro}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{s.RevisionId: true}
	for i := 0; i < 20; i++ {
		c, err := sc.CommitSchema(f.ctx, &pubsubpb.CommitSchemaRequest{Name: s.Name, Schema: &pubsubpb.Schema{Type: pubsubpb.Schema_AVRO, Definition: userAvro}})
		if err != nil {
			t.Fatal(err)
		}
		seen[c.RevisionId] = true
	}
	rb, err := sc.RollbackSchema(f.ctx, &pubsubpb.RollbackSchemaRequest{Name: s.Name, RevisionId: s.RevisionId})
	if err != nil {
		t.Fatal(err)
	}
	seen[rb.RevisionId] = true
	if len(seen) != 22 {
		t.Fatalf("%d distinct revision ids of 22", len(seen))
	}
	for id := range seen {
		if !form.MatchString(id) {
			t.Errorf("revision id %q: want 8 lower-case hex digits", id)
		}
	}
	got, err := sc.GetSchema(f.ctx, &pubsubpb.GetSchemaRequest{Name: s.Name + "@" + s.RevisionId})
	if err != nil || got.RevisionId != s.RevisionId {
		t.Fatalf("get by revision: %v, %v", got, err)
	}
}
