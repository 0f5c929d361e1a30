package main

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestUnaryPullAckNack(t *testing.T) {
	in := startServer(t, func(o *options) { o.messages = 15 })
	sc := rawSubscriber(t, in.addr)
	ctx := context.Background()

	r, err := sc.Pull(ctx, &pubsubpb.PullRequest{Subscription: testSub, MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ReceivedMessages) != 10 {
		t.Fatalf("pulled %d, want 10", len(r.ReceivedMessages))
	}
	ids := ackIDs(r.ReceivedMessages)
	if _, err := sc.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: testSub, AckIds: ids[:9]}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: testSub, AckIds: ids[9:], AckDeadlineSeconds: 0}); err != nil {
		t.Fatal(err)
	}
	// The nacked message comes first, then the last 5 new ones.
	r, err = sc.Pull(ctx, &pubsubpb.PullRequest{Subscription: testSub, MaxMessages: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ReceivedMessages; len(got) != 6 || got[0].DeliveryAttempt != 2 || got[0].Message.MessageId != "10" {
		t.Fatalf("second pull = %v", got)
	}
	// Exhausted: an immediate pull returns nothing.
	r, err = sc.Pull(ctx, &pubsubpb.PullRequest{Subscription: testSub, MaxMessages: 10, ReturnImmediately: true})
	if err != nil || len(r.ReceivedMessages) != 0 {
		t.Fatalf("third pull = %v, %v", r, err)
	}
	if s := in.snapshot(); s.Acks != 9 || s.Nacks != 1 || s.Delivered != 16 || s.Outstanding != 6 || s.PullRPCs != 3 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestAckFaultInjection(t *testing.T) {
	in := startServer(t, func(o *options) {
		o.faults.AckErrorRate = 1
		o.faults.AckErrorCode = Code(codes.ResourceExhausted)
	})
	sc := rawSubscriber(t, in.addr)
	ctx := context.Background()
	r, err := sc.Pull(ctx, &pubsubpb.PullRequest{Subscription: testSub, MaxMessages: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sc.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: testSub, AckIds: ackIDs(r.ReceivedMessages)})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Acknowledge error %v, want ResourceExhausted", err)
	}
	// A failed Acknowledge settles nothing.
	if s := in.snapshot(); s.Acks != 0 || s.Outstanding != 3 || s.InjectedErrors != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestAckRejectionLikeExactlyOnceDelivery(t *testing.T) {
	in := startServer(t, func(o *options) { o.faults.AckRejectRate = 1 })
	sc := rawSubscriber(t, in.addr)
	ctx := context.Background()
	r, err := sc.Pull(ctx, &pubsubpb.PullRequest{Subscription: testSub, MaxMessages: 3})
	if err != nil {
		t.Fatal(err)
	}
	ids := ackIDs(r.ReceivedMessages)
	_, err = sc.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: testSub, AckIds: ids})
	apiErr, ok := apierror.FromError(err)
	if !ok || status.Code(err) != codes.InvalidArgument || len(apiErr.Metadata()) != 3 || apiErr.Metadata()[ids[0]] != "PERMANENT_FAILURE_INVALID_ACK_ID" {
		t.Fatalf("Acknowledge error %v, want INVALID_ARGUMENT naming the 3 ids", err)
	}
	if s := in.snapshot(); s.Acks != 0 || s.Outstanding != 3 {
		t.Fatalf("refused ids must stay unsettled: stats = %+v", s)
	}
}

func TestLatencyInjection(t *testing.T) {
	const lat = 150 * time.Millisecond
	in := startServer(t, func(o *options) { o.faults.Latency = Duration(lat) })
	sc := rawSubscriber(t, in.addr)
	t0 := time.Now()
	if _, err := sc.Pull(context.Background(), &pubsubpb.PullRequest{Subscription: testSub, MaxMessages: 1}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < lat {
		t.Fatalf("Pull took %v, want >= %v", d, lat)
	}
}

func TestAdminRPCs(t *testing.T) {
	in := startServer(t, func(o *options) { o.autoCreate = false })
	c := newClient(t)
	ctx := context.Background()
	code := func(err error) codes.Code { return status.Code(err) }

	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: testSub, Topic: testTopic}); code(err) != codes.NotFound {
		t.Fatalf("subscription to a missing topic: %v", err)
	}
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: testTopic}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: testTopic}); code(err) != codes.AlreadyExists {
		t.Fatalf("second CreateTopic: %v", err)
	}
	if tp, err := c.TopicAdminClient.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: testTopic}); err != nil || tp.Name != testTopic {
		t.Fatalf("GetTopic = %v, %v", tp, err)
	}
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: testSub, Topic: testTopic}); err != nil {
		t.Fatal(err)
	}
	sub, err := c.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: testSub})
	if err != nil || sub.Topic != testTopic || sub.AckDeadlineSeconds != defaultAckDeadlineSeconds {
		t.Fatalf("GetSubscription = %v, %v", sub, err)
	}
	if _, err := c.TopicAdminClient.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: "bad"}); code(err) != codes.InvalidArgument {
		t.Fatalf("GetTopic(bad name): %v", err)
	}

	// Without auto-create, pulling an unknown subscription is NOT_FOUND.
	sc := rawSubscriber(t, in.addr)
	if _, err := sc.Pull(ctx, &pubsubpb.PullRequest{Subscription: "projects/p/subscriptions/none", MaxMessages: 1}); code(err) != codes.NotFound {
		t.Fatalf("Pull(unknown): %v", err)
	}

	// Deleting a subscription ends its streams with NOT_FOUND.
	rs := openStream(t, in, &pubsubpb.StreamingPullRequest{MaxOutstandingMessages: 1})
	rs.take(t, 1, 5*time.Second)
	if err := c.SubscriptionAdminClient.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: testSub}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "stream end", func() bool { return in.snapshot().StreamsActive == 0 })
	if _, err := c.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: testSub}); code(err) != codes.NotFound {
		t.Fatalf("GetSubscription after delete: %v", err)
	}
	if err := c.TopicAdminClient.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: testTopic}); err != nil {
		t.Fatal(err)
	}
	if err := c.TopicAdminClient.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: testTopic}); code(err) != codes.NotFound {
		t.Fatalf("second DeleteTopic: %v", err)
	}
}
