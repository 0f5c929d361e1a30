package emulator

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestStartServesOnFreeLoopbackPort(t *testing.T) {
	e, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	c, err := net.Dial("tcp", e.Addr())
	if err != nil {
		t.Fatalf("dial %s: %v", e.Addr(), err)
	}
	c.Close()
}

func TestStartRejectsNonLoopbackAndBusyPort(t *testing.T) {
	if _, err := Start("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("0.0.0.0: err = %v, want a loopback error", err)
	}
	if _, err := Start("nonsense"); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("nonsense: err = %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Start(l.Addr().String()); err == nil || !strings.Contains(err.Error(), "cannot listen") {
		t.Fatalf("busy port: err = %v, want 'cannot listen'", err)
	}
}

type fixture struct {
	conn *grpc.ClientConn
	pub  pubsubpb.PublisherClient
	sub  pubsubpb.SubscriberClient
	ctx  context.Context
	e    *Emulator
}

func (f *fixture) st() *state { return f.e.state }

func start(t *testing.T) *fixture {
	t.Helper()
	e, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop() })
	conn, err := grpc.NewClient(e.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &fixture{conn, pubsubpb.NewPublisherClient(conn), pubsubpb.NewSubscriberClient(conn), ctx, e}
}

func (f *fixture) topicSub(t *testing.T, sub *pubsubpb.Subscription) {
	t.Helper()
	if _, err := f.pub.CreateTopic(f.ctx, &pubsubpb.Topic{Name: "projects/p/topics/top"}); err != nil {
		t.Fatal(err)
	}
	sub.Name, sub.Topic = "projects/p/subscriptions/sub1", "projects/p/topics/top"
	if _, err := f.sub.CreateSubscription(f.ctx, sub); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) publish(t *testing.T, n int, attrs func(i int) map[string]string) {
	t.Helper()
	req := &pubsubpb.PublishRequest{Topic: "projects/p/topics/top"}
	for i := 0; i < n; i++ {
		m := &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprint(i))}
		if attrs != nil {
			m.Attributes = attrs(i)
		}
		req.Messages = append(req.Messages, m)
	}
	if _, err := f.pub.Publish(f.ctx, req); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) pull(t *testing.T, max int32) []*pubsubpb.ReceivedMessage {
	t.Helper()
	r, err := f.sub.Pull(f.ctx, &pubsubpb.PullRequest{Subscription: "projects/p/subscriptions/sub1", MaxMessages: max})
	if err != nil {
		t.Fatal(err)
	}
	return r.ReceivedMessages
}

func ids(ms []*pubsubpb.ReceivedMessage) (out []string) {
	for _, m := range ms {
		out = append(out, m.AckId)
	}
	return out
}

func TestStreamingPullBatchesWithinFlowControlAndRedeliversAfterCut(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{})
	f.publish(t, 500, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	st, err := f.sub.StreamingPull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pubsubpb.StreamingPullRequest{Subscription: "projects/p/subscriptions/sub1", StreamAckDeadlineSeconds: 10,
		MaxOutstandingMessages: 300}); err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ReceivedMessages) != 300 {
		t.Fatalf("first response has %d messages, want 300 (one batch, flow control 300)", len(r.ReceivedMessages))
	}
	// Acking 100 lets 100 more through on the same stream.
	if err := st.Send(&pubsubpb.StreamingPullRequest{AckIds: ids(r.ReceivedMessages[:100])}); err != nil {
		t.Fatal(err)
	}
	r2, err := st.Recv()
	if err != nil || len(r2.ReceivedMessages) != 100 {
		t.Fatalf("after 100 acks: %d messages, err %v; want 100", len(r2.ReceivedMessages), err)
	}
	cancel() // cut without a half-close: its 300 leased messages stay leased
	if got := f.pull(t, 1000); len(got) != 100 {
		t.Fatalf("pull after cut got %d, want the 100 never delivered", len(got))
	}
}

func TestNackRedeliversAndDeadLettersAfterMaxAttempts(t *testing.T) {
	f := start(t)
	if _, err := f.pub.CreateTopic(f.ctx, &pubsubpb.Topic{Name: "projects/p/topics/dlq"}); err != nil {
		t.Fatal(err)
	}
	f.topicSub(t, &pubsubpb.Subscription{DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: "projects/p/topics/dlq", MaxDeliveryAttempts: 5}})
	if _, err := f.sub.CreateSubscription(f.ctx, &pubsubpb.Subscription{Name: "projects/p/subscriptions/dlsub", Topic: "projects/p/topics/dlq"}); err != nil {
		t.Fatal(err)
	}
	f.publish(t, 1, nil)
	for attempt := int32(1); attempt <= 5; attempt++ {
		got := f.pull(t, 10)
		if len(got) != 1 || got[0].DeliveryAttempt != attempt {
			t.Fatalf("attempt %d: got %v", attempt, got)
		}
		if _, err := f.sub.ModifyAckDeadline(f.ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(got)}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := f.sub.Pull(f.ctx, &pubsubpb.PullRequest{Subscription: "projects/p/subscriptions/dlsub", MaxMessages: 10})
	if err != nil || len(r.ReceivedMessages) != 1 || r.ReceivedMessages[0].Message.Attributes["CloudPubSubDeadLetterSourceDeliveryCount"] != "5" {
		t.Fatalf("dead-letter topic: %v, %v", r, err)
	}
	if got := f.pull(t, 10); len(got) != 0 {
		t.Fatalf("source still delivers %d after dead-lettering", len(got))
	}
}

func TestExactlyOnceReportsStaleAckIDs(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{EnableExactlyOnceDelivery: true})
	f.publish(t, 1, nil)
	first := f.pull(t, 1)
	if _, err := f.sub.ModifyAckDeadline(f.ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(first)}); err != nil {
		t.Fatal(err)
	}
	second := f.pull(t, 1)
	_, err := f.sub.Acknowledge(f.ctx, &pubsubpb.AcknowledgeRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(first)})
	st := status.Convert(err)
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if info == nil || info.Reason != eosFailureReason || info.Metadata[first[0].AckId] != invalidAckID {
		t.Fatalf("stale ack: %v, details %v", err, st.Details())
	}
	if _, err := f.sub.Acknowledge(f.ctx, &pubsubpb.AcknowledgeRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(second)}); err != nil {
		t.Fatalf("current ack: %v", err)
	}
}

func TestOrderingFilterAndSeek(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{EnableMessageOrdering: true, RetainAckedMessages: true,
		Filter: `attributes.kind = "keep" AND NOT attributes:skip`})
	req := &pubsubpb.PublishRequest{Topic: "projects/p/topics/top"}
	for i := 0; i < 6; i++ {
		attrs := map[string]string{"kind": "keep"}
		if i == 5 {
			attrs["skip"] = ""
		}
		req.Messages = append(req.Messages, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprint(i)), OrderingKey: "k", Attributes: attrs})
	}
	req.Messages = append(req.Messages, &pubsubpb.PubsubMessage{Data: []byte("x"), Attributes: map[string]string{"kind": "drop"}})
	if _, err := f.pub.Publish(f.ctx, req); err != nil {
		t.Fatal(err)
	}
	got := f.pull(t, 2)
	if len(got) != 2 || string(got[0].Message.Data) != "0" || string(got[1].Message.Data) != "1" {
		t.Fatalf("first pull: %v", got)
	}
	if more := f.pull(t, 10); len(more) != 0 {
		t.Fatalf("key k delivered %d more while 2 are out", len(more))
	}
	// Nack 1 but ack 0: 1 comes back first, then 2..4; 5 and x never pass the filter.
	f.sub.ModifyAckDeadline(f.ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(got[1:])})
	f.sub.Acknowledge(f.ctx, &pubsubpb.AcknowledgeRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(got[:1])})
	rest := f.pull(t, 10)
	var data []string
	for _, m := range rest {
		data = append(data, string(m.Message.Data))
	}
	if strings.Join(data, ",") != "1,2,3,4" {
		t.Fatalf("after nack: %v, want 1,2,3,4", data)
	}
	f.sub.Acknowledge(f.ctx, &pubsubpb.AcknowledgeRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(rest)})
	if _, err := f.sub.Seek(f.ctx, &pubsubpb.SeekRequest{Subscription: "projects/p/subscriptions/sub1",
		Target: &pubsubpb.SeekRequest_Time{Time: timestamppb.New(time.Now().Add(-time.Minute))}}); err != nil {
		t.Fatal(err)
	}
	if again := f.pull(t, 10); len(again) != 5 {
		t.Fatalf("seek back (retain_acked): %d messages, want 5", len(again))
	}
}

func TestFilterSyntaxErrorsAreInvalidArgument(t *testing.T) {
	for _, bad := range []string{`attributes.k = `, `attributes.k == "v"`, `hasPrefix(attributes.k)`, `(attributes:k`} {
		if _, err := parseFilter(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	f := start(t)
	if _, err := f.pub.CreateTopic(f.ctx, &pubsubpb.Topic{Name: "projects/p/topics/top"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.sub.CreateSubscription(f.ctx, &pubsubpb.Subscription{Name: "projects/p/subscriptions/sub1", Topic: "projects/p/topics/top", Filter: "nonsense"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "nonsense") {
		t.Fatalf("bad filter: %v", err)
	}
}

func TestMemoryCapRefusesWithResourceExhausted(t *testing.T) {
	t.Setenv(memoryCapEnv, "1000")
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{})
	_, err := f.pub.Publish(f.ctx, &pubsubpb.PublishRequest{Topic: "projects/p/topics/top",
		Messages: []*pubsubpb.PubsubMessage{{Data: make([]byte, 2000)}}})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), memoryCapEnv) {
		t.Fatalf("over the cap: %v", err)
	}
}

func TestRetryPolicyHoldsANackedMessageForItsBackoff(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{RetryPolicy: &pubsubpb.RetryPolicy{
		MinimumBackoff: durationpb.New(time.Second), MaximumBackoff: durationpb.New(time.Second)}})
	f.publish(t, 1, nil)
	got := f.pull(t, 1)
	nacked := time.Now()
	f.sub.ModifyAckDeadline(f.ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(got)})
	if again := f.pull(t, 1); len(again) != 0 {
		t.Fatalf("redelivered %v after the nack, before the 1 s backoff", time.Since(nacked))
	}
	for time.Since(nacked) < 3*time.Second {
		if again := f.pull(t, 1); len(again) == 1 {
			if d := time.Since(nacked); d < time.Second {
				t.Fatalf("redelivered after %v, backoff is 1 s", d)
			}
			return
		}
	}
	t.Fatal("not redelivered within 3 s of a 1 s backoff")
}

func TestModifyAckDeadlineExtendsALease(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{})
	f.publish(t, 1, nil)
	got := f.pull(t, 1)
	// A 1 s lease, then extended to 60 s: still leased after the first runs out.
	f.sub.ModifyAckDeadline(f.ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(got), AckDeadlineSeconds: 1})
	f.sub.ModifyAckDeadline(f.ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(got), AckDeadlineSeconds: 60})
	time.Sleep(1200 * time.Millisecond)
	if again := f.pull(t, 1); len(again) != 0 {
		t.Fatal("redelivered although its lease was extended")
	}
	_, err := f.sub.ModifyAckDeadline(f.ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(got), AckDeadlineSeconds: 601})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("601 s: %v", err)
	}
}

func TestStreamingPullFlowControlAtOrBelowZeroIsUnlimited(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{})
	for _, limit := range []int64{-1, 0, -100} {
		f.publish(t, 50, nil)
		ctx, cancel := context.WithCancel(f.ctx)
		st, err := f.sub.StreamingPull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&pubsubpb.StreamingPullRequest{Subscription: "projects/p/subscriptions/sub1", StreamAckDeadlineSeconds: 10,
			MaxOutstandingMessages: limit, MaxOutstandingBytes: limit}); err != nil {
			t.Fatal(err)
		}
		r, err := st.Recv()
		if err != nil || len(r.ReceivedMessages) != 50 {
			t.Fatalf("limits %d: %d messages, err %v; want all 50 at once", limit, len(r.GetReceivedMessages()), err)
		}
		st.Send(&pubsubpb.StreamingPullRequest{AckIds: ids(r.ReceivedMessages)})
		cancel()
	}
}

// On an exactly-once subscription the acks and modacks sent on a stream are
// confirmed on it, as the service does: which ids succeeded, which were invalid.
func TestStreamingPullConfirmsAcksUnderExactlyOnce(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{EnableExactlyOnceDelivery: true})
	f.publish(t, 2, nil)
	st, err := f.sub.StreamingPull(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pubsubpb.StreamingPullRequest{Subscription: "projects/p/subscriptions/sub1", StreamAckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	var got []*pubsubpb.ReceivedMessage
	for len(got) < 2 {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.ReceivedMessages...)
	}
	stale := "1.999.1"
	if err := st.Send(&pubsubpb.StreamingPullRequest{AckIds: []string{got[0].AckId, stale},
		ModifyDeadlineAckIds: []string{got[1].AckId, stale}, ModifyDeadlineSeconds: []int32{30, 30}}); err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	ac, mc := r.AcknowledgeConfirmation, r.ModifyAckDeadlineConfirmation
	if ac == nil || strings.Join(ac.AckIds, ",") != got[0].AckId || strings.Join(ac.InvalidAckIds, ",") != stale {
		t.Errorf("ack confirmation: %v", ac)
	}
	if mc == nil || strings.Join(mc.AckIds, ",") != got[1].AckId || strings.Join(mc.InvalidAckIds, ",") != stale {
		t.Errorf("modack confirmation: %v", mc)
	}
	if !r.SubscriptionProperties.GetExactlyOnceDeliveryEnabled() {
		t.Errorf("subscription properties: %v", r.SubscriptionProperties)
	}
}
