package main

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

const (
	testSub   = "projects/p/subscriptions/s"
	testTopic = "projects/p/topics/t"
)

// startServer runs a load server for the test, configured by mutate, and
// points PUBSUB_EMULATOR_HOST at it as a harness would.
func startServer(t *testing.T, mutate func(*options)) *instance {
	t.Helper()
	o := defaultOptions()
	o.expiryScan = 50 * time.Millisecond
	if mutate != nil {
		mutate(&o)
	}
	in, err := start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.close)
	t.Setenv("PUBSUB_EMULATOR_HOST", in.addr)
	return in
}

// newClient is Google's high-level Go client, configured only through
// PUBSUB_EMULATOR_HOST.
func newClient(t *testing.T) *pubsub.Client {
	t.Helper()
	c, err := pubsub.NewClient(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fastRetryClient is newClient whose publishes retry UNAVAILABLE every
// 5-20 ms, so hundreds of attempts fit in the publish timeout and a test
// that injects publish faults at a fixed rate cannot run out of them.
func fastRetryClient(t *testing.T) *pubsub.Client {
	t.Helper()
	retry := gax.WithRetry(func() gax.Retryer {
		return gax.OnCodes([]codes.Code{codes.Unavailable},
			gax.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Multiplier: 2})
	})
	cfg := &pubsub.ClientConfig{TopicAdminCallOptions: &vkit.TopicAdminCallOptions{Publish: []gax.CallOption{retry}}}
	c, err := pubsub.NewClientWithConfig(context.Background(), "p", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawSubscriber is a bare generated gRPC client, for checks the
// high-level client would hide (it has its own flow control and leasing).
func rawSubscriber(t testing.TB, addr string) pubsubpb.SubscriberClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pubsubpb.NewSubscriberClient(cc)
}

// waitFor polls cond until it holds or the bound passes.
func waitFor(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// streamHighWater is the most any stream lease of sub ever had outstanding.
func streamHighWater(in *instance, sub string) (hw int64) {
	for _, l := range in.leases.all() {
		if l.sub.name == sub && l != l.sub.pull {
			_, h, _ := l.state()
			hw = max(hw, h)
		}
	}
	return hw
}
