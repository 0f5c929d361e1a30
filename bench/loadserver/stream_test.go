package main

import (
	"context"
	"io"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// rawStream is a StreamingPull opened with the bare generated client;
// msgs yields every message received, in order.
type rawStream struct {
	pubsubpb.Subscriber_StreamingPullClient
	msgs chan *pubsubpb.ReceivedMessage
}

func openStream(t *testing.T, in *instance, first *pubsubpb.StreamingPullRequest) *rawStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sc, err := rawSubscriber(t, in.addr).StreamingPull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Subscription == "" {
		first.Subscription = testSub
	}
	if err := sc.Send(first); err != nil {
		t.Fatal(err)
	}
	rs := &rawStream{sc, make(chan *pubsubpb.ReceivedMessage, 1<<16)}
	go func() {
		for {
			resp, err := sc.Recv()
			if err != nil {
				return
			}
			for _, m := range resp.ReceivedMessages {
				rs.msgs <- m
			}
		}
	}()
	return rs
}

// take returns the next n messages, failing after bound.
func (rs *rawStream) take(t *testing.T, n int, bound time.Duration) []*pubsubpb.ReceivedMessage {
	t.Helper()
	timeout := time.After(bound)
	var got []*pubsubpb.ReceivedMessage
	for len(got) < n {
		select {
		case m := <-rs.msgs:
			got = append(got, m)
		case <-timeout:
			t.Fatalf("got %d messages of %d within %v", len(got), n, bound)
		}
	}
	return got
}

// none fails if a message arrives within window.
func (rs *rawStream) none(t *testing.T, window time.Duration) {
	t.Helper()
	select {
	case m := <-rs.msgs:
		t.Fatalf("unexpected message %s (ack id %s)", m.Message.MessageId, m.AckId)
	case <-time.After(window):
	}
}

func ackIDs(ms []*pubsubpb.ReceivedMessage) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.AckId
	}
	return ids
}

func TestStreamCreditRefillsOnAck(t *testing.T) {
	in := startServer(t, nil)
	rs := openStream(t, in, &pubsubpb.StreamingPullRequest{MaxOutstandingMessages: 5, StreamAckDeadlineSeconds: 60})
	first := rs.take(t, 5, 5*time.Second)
	rs.none(t, 200*time.Millisecond)

	if err := rs.Send(&pubsubpb.StreamingPullRequest{AckIds: ackIDs(first[:2])}); err != nil {
		t.Fatal(err)
	}
	more := rs.take(t, 2, 5*time.Second)
	rs.none(t, 200*time.Millisecond)

	seen := make(map[string]bool)
	for _, m := range append(first, more...) {
		if seen[m.AckId] || seen[m.Message.MessageId] {
			t.Fatalf("duplicate id in %v", m)
		}
		seen[m.AckId], seen[m.Message.MessageId] = true, true
	}
	if s := in.snapshot(); s.Acks != 2 || s.Outstanding != 5 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestStreamByteLimit(t *testing.T) {
	in := startServer(t, func(o *options) { o.payloadBytes = 1000 })
	size := in.synth.size
	rs := openStream(t, in, &pubsubpb.StreamingPullRequest{MaxOutstandingBytes: size * 5 / 2, StreamAckDeadlineSeconds: 60})
	rs.take(t, 2, 5*time.Second)
	rs.none(t, 200*time.Millisecond)

	// A limit below one message still lets one through, as the service does.
	rs2 := openStream(t, in, &pubsubpb.StreamingPullRequest{MaxOutstandingBytes: 10, StreamAckDeadlineSeconds: 60})
	rs2.take(t, 1, 5*time.Second)
	rs2.none(t, 200*time.Millisecond)
}

func TestStreamExpiredMessageRedelivered(t *testing.T) {
	in := startServer(t, func(o *options) { o.messages = 1 })
	rs := openStream(t, in, &pubsubpb.StreamingPullRequest{StreamAckDeadlineSeconds: 1})
	a := rs.take(t, 1, 5*time.Second)[0]
	b := rs.take(t, 1, 5*time.Second)[0] // after the 1 s deadline
	if b.Message.MessageId != a.Message.MessageId || b.AckId == a.AckId || a.DeliveryAttempt != 1 || b.DeliveryAttempt != 2 {
		t.Fatalf("first %v, redelivery %v", a, b)
	}
	if s := in.snapshot(); s.Expired != 1 || s.Redelivered != 1 {
		t.Fatalf("stats = %+v", s)
	}
	// Acking the stale id is a miss; acking the live one settles it.
	if err := rs.Send(&pubsubpb.StreamingPullRequest{AckIds: []string{a.AckId, b.AckId}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "acks", func() bool { return in.snapshot().Acks == 2 })
	if s := in.snapshot(); s.AckMisses != 1 || s.Outstanding != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestStreamModackExtendsAndNacks(t *testing.T) {
	in := startServer(t, func(o *options) { o.messages = 2 })
	rs := openStream(t, in, &pubsubpb.StreamingPullRequest{StreamAckDeadlineSeconds: 1})
	ms := rs.take(t, 2, 5*time.Second)
	// Extend the first, nack the second: only the second comes back.
	if err := rs.Send(&pubsubpb.StreamingPullRequest{
		ModifyDeadlineAckIds:  ackIDs(ms),
		ModifyDeadlineSeconds: []int32{60, 0},
	}); err != nil {
		t.Fatal(err)
	}
	again := rs.take(t, 1, 5*time.Second)[0]
	if again.Message.MessageId != ms[1].Message.MessageId {
		t.Fatalf("redelivered %s, want %s", again.Message.MessageId, ms[1].Message.MessageId)
	}
	if err := rs.Send(&pubsubpb.StreamingPullRequest{AckIds: []string{again.AckId}}); err != nil {
		t.Fatal(err)
	}
	rs.none(t, 1500*time.Millisecond) // past the original 1 s deadline
	if s := in.snapshot(); s.Modacks != 1 || s.Nacks != 1 || s.Expired != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

// openBareStream opens a StreamingPull on testSub without flow-control
// limits, whose responses the test reads itself; it ends after bound.
func openBareStream(t *testing.T, in *instance, bound time.Duration) pubsubpb.Subscriber_StreamingPullClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	sc, err := rawSubscriber(t, in.addr).StreamingPull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Send(&pubsubpb.StreamingPullRequest{Subscription: testSub, StreamAckDeadlineSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	return sc
}

// An idle stream gets empty responses, which Google's Go client needs to
// see within 15 s of its pings or it reopens the stream.
func TestIdleStreamHeartbeats(t *testing.T) {
	in := startServer(t, func(o *options) {
		o.messages = 1
		o.heartbeat = 20 * time.Millisecond
	})
	sc := openBareStream(t, in, 5*time.Second)
	for i, want := range []int{1, 0, 0} {
		resp, err := sc.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got := len(resp.ReceivedMessages); got != want || resp.SubscriptionProperties == nil {
			t.Fatalf("response %d: %d messages, properties %v; want %d messages and properties", i, got, resp.SubscriptionProperties, want)
		}
	}
}

// A client that half-closes a stream with credit left gets the stream's
// end, not more messages: it reads to the end before nacking what it holds,
// so a server that kept sending would feed it without bound.
func TestHalfCloseEndsStreamWithCredit(t *testing.T) {
	in := startServer(t, nil)
	sc := openBareStream(t, in, 10*time.Second) // no flow-control limits: the server always has credit
	if _, err := sc.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := sc.CloseSend(); err != nil {
		t.Fatal(err)
	}
	closed := in.snapshot().Delivered
	for {
		_, err := sc.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream ended with %v, want io.EOF", err)
		}
	}
	// What was in flight at the half-close may still arrive; a stream that
	// went on would have sent millions in the 10 s bound.
	if after := in.snapshot().Delivered - closed; after > 100_000 {
		t.Fatalf("%d messages delivered after the half-close", after)
	}
}
