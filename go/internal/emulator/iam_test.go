package emulator

import (
	"bytes"
	"testing"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIAMPoliciesAreKeptPerResource(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{})
	iam := iampb.NewIAMPolicyClient(f.conn)
	const topic, sub = "projects/p/topics/top", "projects/p/subscriptions/sub1"
	p, err := iam.GetIamPolicy(f.ctx, &iampb.GetIamPolicyRequest{Resource: topic})
	if err != nil || len(p.Bindings) != 0 || !bytes.Equal(p.Etag, emptyPolicyEtag) {
		t.Fatalf("no policy yet: %v, %v", p, err)
	}
	set, err := iam.SetIamPolicy(f.ctx, &iampb.SetIamPolicyRequest{Resource: topic, Policy: &iampb.Policy{
		Etag:     p.Etag,
		Bindings: []*iampb.Binding{{Role: "roles/pubsub.publisher", Members: []string{"serviceAccount:a@p.iam.gserviceaccount.com", "allUsers"}}}}})
	if err != nil || len(set.Etag) == 0 || bytes.Equal(set.Etag, p.Etag) {
		t.Fatalf("set: %v, %v", set, err)
	}
	got, err := iam.GetIamPolicy(f.ctx, &iampb.GetIamPolicyRequest{Resource: topic})
	if err != nil || len(got.Bindings) != 1 || got.Bindings[0].Role != "roles/pubsub.publisher" || len(got.Bindings[0].Members) != 2 ||
		!bytes.Equal(got.Etag, set.Etag) {
		t.Fatalf("get after set: %v, %v", got, err)
	}
	// Another resource has its own (none).
	if other, err := iam.GetIamPolicy(f.ctx, &iampb.GetIamPolicyRequest{Resource: sub}); err != nil || len(other.Bindings) != 0 {
		t.Fatalf("subscription's policy: %v, %v", other, err)
	}
	// A stale etag is refused: a concurrent change.
	_, err = iam.SetIamPolicy(f.ctx, &iampb.SetIamPolicyRequest{Resource: topic, Policy: &iampb.Policy{Etag: p.Etag}})
	if status.Code(err) != codes.Aborted {
		t.Fatalf("stale etag: %v", err)
	}
	for _, b := range []*iampb.Binding{{Role: "roles/pubsub.viewer", Members: []string{"bob"}}, {Role: "pubsub.viewer", Members: []string{"user:b@x.com"}}} {
		if _, err := iam.SetIamPolicy(f.ctx, &iampb.SetIamPolicyRequest{Resource: sub, Policy: &iampb.Policy{Bindings: []*iampb.Binding{b}}}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("binding %v: %v", b, err)
		}
	}
	perms, err := iam.TestIamPermissions(f.ctx, &iampb.TestIamPermissionsRequest{Resource: sub,
		Permissions: []string{"pubsub.subscriptions.consume", "pubsub.subscriptions.update"}})
	if err != nil || len(perms.Permissions) != 2 {
		t.Fatalf("test permissions: %v, %v", perms, err)
	}
	if _, err := iam.GetIamPolicy(f.ctx, &iampb.GetIamPolicyRequest{Resource: "projects/p/topics/nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("missing topic: %v", err)
	}
	if _, err := iam.GetIamPolicy(f.ctx, &iampb.GetIamPolicyRequest{Resource: "projects/p/topics/1x"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("malformed topic: %v", err)
	}
	// Deleting the topic forgets its policy.
	if _, err := f.pub.DeleteTopic(f.ctx, &pubsubpb.DeleteTopicRequest{Topic: topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pub.CreateTopic(f.ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	if p, err := iam.GetIamPolicy(f.ctx, &iampb.GetIamPolicyRequest{Resource: topic}); err != nil || len(p.Bindings) != 0 {
		t.Fatalf("recreated topic's policy: %v, %v", p, err)
	}
}
