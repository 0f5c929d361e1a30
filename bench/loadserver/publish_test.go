package main

import (
	"context"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// publishAll publishes m messages of size bytes with Google's publisher and
// returns the distinct ids and the errors.
func publishAll(t *testing.T, m, size int) (ids map[string]bool, errs []error) {
	t.Helper()
	return publishWith(t, newClient(t), m, size)
}

// publishWith is publishAll through the given client.
func publishWith(t *testing.T, c *pubsub.Client, m, size int) (ids map[string]bool, errs []error) {
	t.Helper()
	pub := c.Publisher(testTopic)
	defer pub.Stop()
	ctx := context.Background()
	data := make([]byte, size)
	rs := make([]*pubsub.PublishResult, m)
	for i := range rs {
		rs[i] = pub.Publish(ctx, &pubsub.Message{Data: data, Attributes: map[string]string{"k": "v"}})
	}
	ids = make(map[string]bool)
	for _, r := range rs {
		id, err := r.Get(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids[id] = true
	}
	return ids, errs
}

func TestGoPublisherCounted(t *testing.T) {
	const m, size = 2500, 100
	in := startServer(t, nil)
	ids, errs := publishAll(t, m, size)
	if len(errs) > 0 || len(ids) != m {
		t.Fatalf("%d distinct ids of %d, errors %v", len(ids), m, errs)
	}
	if s := in.snapshot(); s.Published != m || s.PublishedBytes != m*size || s.PublishRPCs < m/100 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestPublishFaultNonRetryable(t *testing.T) {
	in := startServer(t, func(o *options) {
		o.faults.PublishErrorRate = 1
		o.faults.PublishErrorCode = Code(codes.PermissionDenied)
	})
	_, errs := publishAll(t, 10, 10)
	if len(errs) != 10 {
		t.Fatalf("%d errors, want 10", len(errs))
	}
	for _, err := range errs {
		if c := status.Code(err); c != codes.PermissionDenied {
			t.Fatalf("error %v has code %v, want PermissionDenied", err, c)
		}
	}
	if s := in.snapshot(); s.Published != 0 || s.InjectedErrors == 0 {
		t.Fatalf("stats = %+v", s)
	}
}

// Injected UNAVAILABLE is retried by the client until everything lands.
// 4000 messages go out in ~40 RPCs, so the chance that a 0.3 fault rate
// injects nothing at all is 0.7^40 < 1e-6 (with 1000 messages, ~10 RPCs,
// it was 0.7^10 = 2.8%, and the test failed in a CI run).
//
// The client retries on a fast schedule (fastRetryClient): with its default
// backoff (100 ms x4 up to 60 s, jittered) only ~7 attempts fit in the 60 s
// publish timeout, so one of the 40 batches failing every one of them
// (40 x 0.3^7, about 1%) failed a CI run with 100 "context deadline
// exceeded".
func TestPublishFaultRetried(t *testing.T) {
	const m = 4000
	in := startServer(t, func(o *options) {
		o.faults.PublishErrorRate = 0.3
		o.faults.PublishErrorCode = Code(codes.Unavailable)
	})
	ids, errs := publishWith(t, fastRetryClient(t), m, 10)
	if len(errs) > 0 || len(ids) != m {
		t.Fatalf("%d ids, errors %v", len(ids), errs)
	}
	if s := in.snapshot(); s.Published != m || s.InjectedErrors == 0 || s.PublishRPCs <= s.InjectedErrors {
		t.Fatalf("stats = %+v", s)
	}
}
