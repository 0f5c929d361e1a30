package subscriber

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

func TestStreamingPullRequestCarriesFlowControl(t *testing.T) {
	srv := newServer(t)
	var f faults
	cfg := testConfig(srv)
	cfg.Streams = 2
	cfg.MaxOutstandingMessages = 1001
	cfg.MaxOutstandingBytes = 3000
	cfg.AckDeadlineSeconds = 30
	openTest(t, cfg, nil, f.options()...)
	waitFor(t, 5*time.Second, "2 streams", func() bool { return f.streamCount() == 2 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.initial) != 2 {
		t.Fatalf("%d initial requests, want 2", len(f.initial))
	}
	// The stream's deadline is the short prefetch lease (10 s, Pub/Sub's
	// minimum), not the 30 s ack deadline of handed-out messages. The
	// server's limits are serverLimits: two windows of messages, no bytes.
	for i, r := range f.initial {
		if r.Subscription != testSub || r.MaxOutstandingMessages != 1001 || r.MaxOutstandingBytes != 0 ||
			r.StreamAckDeadlineSeconds != 10 || r.ProtocolVersion != 1 || r.ClientId == "" {
			t.Errorf("stream %d initial request %v", i, r)
		}
	}
	if f.initial[0].ClientId != f.initial[1].ClientId {
		t.Errorf("streams of one subscriber have different client ids %q, %q", f.initial[0].ClientId, f.initial[1].ClientId)
	}
}

func TestStreamReconnectsOnRetryableErrors(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.ResourceExhausted, codes.Internal} {
		t.Run(code.String(), func(t *testing.T) {
			srv := newServer(t)
			// The first two streams fail on their first receive.
			f := faults{recvErr: func(stream int) error {
				if stream < 2 {
					return rpc.Errorf(code, "injected")
				}
				return nil
			}}
			s := openTest(t, testConfig(srv), fast, f.options()...)
			publish(srv, 3)
			got := nextRows(t, s, 3, 5*time.Second)
			if st := s.Stats(); st.StreamsRestarted != 2 {
				t.Errorf("streams_restarted = %d, want 2", st.StreamsRestarted)
			}
			if err := s.Ack(ackIDs(got)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestStreamReconnectsWithBackoff(t *testing.T) {
	srv := newServer(t)
	f := faults{recvErr: func(int) error { return rpc.Errorf(codes.Unavailable, "down") }}
	s := openTest(t, testConfig(srv), fast, f.options()...) // backoff 20ms doubling to 200ms
	time.Sleep(time.Second)
	// Without backoff this would be hundreds; with it about 8 (10..20,
	// 20..40, 40..80, 80..160, then 100..200 ms apart).
	if n := s.Stats().StreamsRestarted; n < 3 || n > 20 {
		t.Errorf("%d reconnects in 1s, want backoff to keep it between 3 and 20", n)
	}
	// The error is retryable, so Next does not report it.
	b, err := s.Next(context.Background(), 1, 10*time.Millisecond)
	if err != nil {
		t.Fatalf("Next = %v during retryable stream errors", err)
	}
	b.Release()
}

func TestStreamReconnectsWhenServerEndsStream(t *testing.T) {
	srv := newServer(t)
	srv.SetStreamTimeout(200 * time.Millisecond)
	s := openTest(t, testConfig(srv), fast)
	waitFor(t, 5*time.Second, "2 stream restarts", func() bool { return s.Stats().StreamsRestarted >= 2 })
	publish(srv, 2)
	got := nextRows(t, s, 2, 5*time.Second)
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
}

// nextError calls Next until it fails, for errors that arrive from a
// stream asynchronously.
func nextError(t *testing.T, s *Subscriber) error {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := s.Next(context.Background(), 1, 50*time.Millisecond)
		if err != nil {
			return err
		}
		b.Release()
	}
	t.Fatal("Next kept succeeding for 5s")
	return nil
}

func TestPermanentStreamErrorSurfacesInNext(t *testing.T) {
	srv := newServer(t)
	f := faults{recvErr: func(int) error {
		return rpc.Errorf(codes.PermissionDenied, "injected: no pubsub.subscriptions.consume")
	}}
	s := openTest(t, testConfig(srv), fast, f.options()...)
	err := nextError(t, s)
	if rpc.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), testSub) {
		t.Fatalf("Next = %v, want PERMISSION_DENIED naming the subscription", err)
	}
	if _, err := s.Next(context.Background(), 1, time.Millisecond); rpc.Code(err) != codes.PermissionDenied {
		t.Errorf("second Next = %v, want the same error", err)
	}
	if n := f.streamCount(); n != 1 {
		t.Errorf("%d streams opened, want 1: a permanent error is not retried", n)
	}
}

func TestDeletedSubscriptionSurfacesNotFound(t *testing.T) {
	srv := newServer(t)
	srv.SetStreamTimeout(200 * time.Millisecond) // pstest ends streams; the reconnect sees the deletion
	s := openTest(t, testConfig(srv), fast)
	if _, err := srv.GServer.DeleteSubscription(context.Background(), &pb.DeleteSubscriptionRequest{Subscription: testSub}); err != nil {
		t.Fatal(err)
	}
	if err := nextError(t, s); rpc.Code(err) != codes.NotFound {
		t.Fatalf("Next = %v, want NOT_FOUND", err)
	}
}

func TestKeepAliveRestartsSilentStream(t *testing.T) {
	srv := newServer(t)
	// The first stream goes silent after answering one ping (so the
	// subscriber knows the server answers pings), like a dead connection.
	f := faults{silence: func(stream int, res *pb.StreamingPullResponse) bool {
		return stream == 0 && len(res.GetReceivedMessages()) == 0
	}}
	s := openTest(t, testConfig(srv), func(set *settings) {
		fast(set)
		set.pingInterval = 50 * time.Millisecond
	}, f.options()...)
	waitFor(t, 5*time.Second, "a second stream", func() bool { return f.streamCount() >= 2 })
	if st := s.Stats(); st.StreamsRestarted < 1 {
		t.Errorf("streams_restarted = %d, want >= 1", st.StreamsRestarted)
	}
	publish(srv, 1)
	got := nextRows(t, s, 1, 5*time.Second)
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
}
