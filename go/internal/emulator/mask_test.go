package emulator

import (
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// UpdateTopic takes the nested schema_settings.* paths Google's Python
// client sends to change a topic's revision range.
func TestUpdateTopicChangesTheSchemaRevisionRange(t *testing.T) {
	f := start(t)
	sc := pubsubpb.NewSchemaServiceClient(f.conn)
	first, err := sc.CreateSchema(f.ctx, &pubsubpb.CreateSchemaRequest{Parent: "projects/p", SchemaId: "users",
		Schema: &pubsubpb.Schema{Type: pubsubpb.Schema_AVRO, Definition: userAvro}})
	if err != nil {
		t.Fatal(err)
	}
	second, err := sc.CommitSchema(f.ctx, &pubsubpb.CommitSchemaRequest{Name: first.Name,
		Schema: &pubsubpb.Schema{Type: pubsubpb.Schema_AVRO, Definition: userAvro}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.pub.CreateTopic(f.ctx, &pubsubpb.Topic{Name: "projects/p/topics/top", SchemaSettings: &pubsubpb.SchemaSettings{
		Schema: first.Name, Encoding: pubsubpb.Encoding_JSON}}); err != nil {
		t.Fatal(err)
	}
	got, err := f.pub.UpdateTopic(f.ctx, &pubsubpb.UpdateTopicRequest{
		Topic: &pubsubpb.Topic{Name: "projects/p/topics/top", SchemaSettings: &pubsubpb.SchemaSettings{
			FirstRevisionId: first.RevisionId, LastRevisionId: second.RevisionId}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"schema_settings.first_revision_id", "schema_settings.last_revision_id"}}})
	if err != nil {
		t.Fatal(err)
	}
	ss := got.SchemaSettings
	if ss.Schema != first.Name || ss.Encoding != pubsubpb.Encoding_JSON || ss.FirstRevisionId != first.RevisionId || ss.LastRevisionId != second.RevisionId {
		t.Fatalf("schema settings after the update: %v", ss)
	}
	// The whole of schema_settings, cleared.
	got, err = f.pub.UpdateTopic(f.ctx, &pubsubpb.UpdateTopicRequest{Topic: &pubsubpb.Topic{Name: "projects/p/topics/top"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"schema_settings"}}})
	if err != nil || got.SchemaSettings != nil {
		t.Fatalf("clearing schema_settings: %v, %v", got, err)
	}
	for _, path := range []string{"nope", "schema_settings.nope", "labels.x", "name", "schemaSettings"} {
		_, err = f.pub.UpdateTopic(f.ctx, &pubsubpb.UpdateTopicRequest{Topic: &pubsubpb.Topic{Name: "projects/p/topics/top"},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{path}}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "'"+path+"' is not a known Topic field") {
			t.Errorf("path %q: %v", path, err)
		}
	}
}

func TestUpdateSubscriptionTakesNestedPaths(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{RetryPolicy: &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(time.Second),
		MaximumBackoff: durationpb.New(time.Minute)}, Labels: map[string]string{"a": "1"}})
	got, err := f.sub.UpdateSubscription(f.ctx, &pubsubpb.UpdateSubscriptionRequest{
		Subscription: &pubsubpb.Subscription{Name: "projects/p/subscriptions/sub1",
			RetryPolicy: &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(5 * time.Second)},
			PushConfig:  &pubsubpb.PushConfig{Attributes: map[string]string{"x-goog-version": "v1"}},
			Labels:      map[string]string{"b": "2"}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"retry_policy.minimum_backoff", "push_config.attributes", "labels",
			"expiration_policy.ttl"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.RetryPolicy.MinimumBackoff.AsDuration() != 5*time.Second || got.RetryPolicy.MaximumBackoff.AsDuration() != time.Minute {
		t.Errorf("retry policy: %v", got.RetryPolicy)
	}
	if got.PushConfig.Attributes["x-goog-version"] != "v1" || len(got.Labels) != 1 || got.Labels["b"] != "2" {
		t.Errorf("push config %v, labels %v", got.PushConfig, got.Labels)
	}
	// The new backoff applies to deliveries.
	sub, _ := f.st().subscription("projects/p/subscriptions/sub1")
	sub.mu.Lock()
	rmin := sub.set.retryMin
	sub.mu.Unlock()
	if rmin != 5*time.Second {
		t.Errorf("retry minimum in force: %v", rmin)
	}
	_, err = f.sub.UpdateSubscription(f.ctx, &pubsubpb.UpdateSubscriptionRequest{
		Subscription: &pubsubpb.Subscription{Name: "projects/p/subscriptions/sub1"},
		UpdateMask:   &fieldmaskpb.FieldMask{Paths: []string{"retry_policy.nope"}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "'retry_policy.nope' is not a known Subscription field") {
		t.Errorf("unknown nested path: %v", err)
	}
}
