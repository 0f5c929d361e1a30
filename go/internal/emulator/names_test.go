package emulator

import (
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

func TestCheckNameFollowsTheServiceRules(t *testing.T) {
	good := []string{"projects/p/topics/abc", "projects/my-proj/topics/a-b_c.d~e+f%g", "projects/p/topics/" + strings.Repeat("a", 255),
		"projects/example.com:proj/topics/top", "projects/p/topics/t"} // (shorter than 3: accepted, as Google's emulator does)
	for _, n := range good {
		if err := checkName(n, "topics"); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	bad := []string{"projects/p/topics/123", "projects/p/topics/goog-x", "projects/p/topics/a b", "projects/p/topics/" + strings.Repeat("a", 256),
		"projects/p/topics/", "projects//topics/abc", "projects/p/subscriptions/abc", "topics/abc", "", "projects/p/topics/a/b", "projects/p/topics/a$"}
	for _, n := range bad {
		err := checkName(n, "topics")
		if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != "Invalid [topics] name: (name="+n+")" {
			t.Errorf("%q: %v", n, err)
		}
	}
}

// Every RPC answers a malformed name with INVALID_ARGUMENT in the service's
// words before it looks anything up (not NOT_FOUND).
func TestMalformedNamesAreInvalidArgumentNotNotFound(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{})
	sc := pubsubpb.NewSchemaServiceClient(f.conn)
	const badSub, badTopic, badSnap, badSchema = "projects/p/subscriptions/123", "projects/p/topics/9top", "projects/p/snapshots/goog-s", "projects/p/schemas/1s"
	calls := map[string]struct {
		kind, name string
		call       func() error
	}{
		"GetSubscription": {"subscriptions", badSub, func() error {
			_, err := f.sub.GetSubscription(f.ctx, &pubsubpb.GetSubscriptionRequest{Subscription: badSub})
			return err
		}},
		"DeleteSubscription": {"subscriptions", badSub, func() error {
			_, err := f.sub.DeleteSubscription(f.ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: badSub})
			return err
		}},
		"Pull": {"subscriptions", badSub, func() error {
			_, err := f.sub.Pull(f.ctx, &pubsubpb.PullRequest{Subscription: badSub, MaxMessages: 1})
			return err
		}},
		"Acknowledge": {"subscriptions", badSub, func() error {
			_, err := f.sub.Acknowledge(f.ctx, &pubsubpb.AcknowledgeRequest{Subscription: badSub, AckIds: []string{"x"}})
			return err
		}},
		"StreamingPull": {"subscriptions", badSub, func() error {
			st, err := f.sub.StreamingPull(f.ctx)
			if err != nil {
				return err
			}
			st.Send(&pubsubpb.StreamingPullRequest{Subscription: badSub, StreamAckDeadlineSeconds: 10})
			_, err = st.Recv()
			return err
		}},
		"UpdateSubscription": {"subscriptions", badSub, func() error {
			_, err := f.sub.UpdateSubscription(f.ctx, &pubsubpb.UpdateSubscriptionRequest{Subscription: &pubsubpb.Subscription{Name: badSub},
				UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}}})
			return err
		}},
		"CreateSubscription topic": {"topics", badTopic, func() error {
			_, err := f.sub.CreateSubscription(f.ctx, &pubsubpb.Subscription{Name: "projects/p/subscriptions/new", Topic: badTopic})
			return err
		}},
		"GetTopic": {"topics", badTopic, func() error {
			_, err := f.pub.GetTopic(f.ctx, &pubsubpb.GetTopicRequest{Topic: badTopic})
			return err
		}},
		"DeleteTopic": {"topics", badTopic, func() error {
			_, err := f.pub.DeleteTopic(f.ctx, &pubsubpb.DeleteTopicRequest{Topic: badTopic})
			return err
		}},
		"Publish": {"topics", badTopic, func() error {
			_, err := f.pub.Publish(f.ctx, &pubsubpb.PublishRequest{Topic: badTopic, Messages: []*pubsubpb.PubsubMessage{{Data: []byte("x")}}})
			return err
		}},
		"GetSnapshot": {"snapshots", badSnap, func() error {
			_, err := f.sub.GetSnapshot(f.ctx, &pubsubpb.GetSnapshotRequest{Snapshot: badSnap})
			return err
		}},
		"Seek snapshot": {"snapshots", badSnap, func() error {
			_, err := f.sub.Seek(f.ctx, &pubsubpb.SeekRequest{Subscription: "projects/p/subscriptions/sub1", Target: &pubsubpb.SeekRequest_Snapshot{Snapshot: badSnap}})
			return err
		}},
		"GetSchema": {"schemas", badSchema, func() error {
			_, err := sc.GetSchema(f.ctx, &pubsubpb.GetSchemaRequest{Name: badSchema})
			return err
		}},
		"DeleteSchema": {"schemas", badSchema, func() error {
			_, err := sc.DeleteSchema(f.ctx, &pubsubpb.DeleteSchemaRequest{Name: badSchema})
			return err
		}},
		"ListTopics": {"projects", "projects/", func() error {
			_, err := f.pub.ListTopics(f.ctx, &pubsubpb.ListTopicsRequest{Project: "projects/"})
			return err
		}},
	}
	for what, c := range calls {
		err := c.call()
		want := "Invalid [" + c.kind + "] name: (name=" + c.name + ")"
		if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != want {
			t.Errorf("%s: %v; want INVALID_ARGUMENT %q", what, err, want)
		}
	}
	// A well-formed name that does not exist is still NOT_FOUND.
	if _, err := f.sub.GetSubscription(f.ctx, &pubsubpb.GetSubscriptionRequest{Subscription: "projects/p/subscriptions/nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("missing subscription: %v", err)
	}
}
