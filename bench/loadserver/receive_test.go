package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
)

// Google's Go client receives exactly the configured messages and the
// server counts every ack.
func TestGoClientReceivesAndAcks(t *testing.T) {
	const n, size, attrs = 3000, 700, 3
	in := startServer(t, func(o *options) {
		o.messages, o.payloadBytes, o.attributes = n, size, attrs
		o.batch = 128 // several responses
	})
	sub := newClient(t).Subscriber(testSub)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	ids := make(map[string]bool)
	var bad []string
	err := sub.Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case len(m.Data) != size:
			bad = append(bad, "data size")
		case len(m.Attributes) != attrs || m.Attributes["attr-002"] != "value-002":
			bad = append(bad, "attributes")
		case time.Since(m.PublishTime) > time.Minute:
			bad = append(bad, "publish time")
		case ids[m.ID]:
			bad = append(bad, "duplicate id "+m.ID)
		}
		ids[m.ID] = true
		m.Ack()
		if len(ids) == n {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n || len(bad) > 0 {
		t.Fatalf("received %d distinct messages (want %d); problems: %v", len(ids), n, bad)
	}
	// Receive flushes acks before returning; allow for the RPC in flight.
	waitFor(t, 5*time.Second, "server to count acks", func() bool { return in.snapshot().Acks == n })
	s := in.snapshot()
	if s.Delivered != n || s.AckMisses != 0 || s.Outstanding != 0 || s.DeliveredBytes != n*size {
		t.Fatalf("stats = %+v", s)
	}
}

// With MaxOutstandingMessages=10 and no acks, the server stops at 10.
func TestGoClientFlowControlRespected(t *testing.T) {
	in := startServer(t, nil)
	sub := newClient(t).Subscriber(testSub)
	sub.ReceiveSettings.MaxOutstandingMessages = 10

	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	var got atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- sub.Receive(ctx, func(_ context.Context, m *pubsub.Message) {
			got.Add(1)
			<-release // hold the message: it stays outstanding
			m.Ack()
		})
	}()
	waitFor(t, 10*time.Second, "10 deliveries", func() bool { return in.snapshot().Delivered >= 10 })
	// Give the server time in which it could overshoot if it ignored the
	// limit (it pushes ~100k msg/s when allowed).
	time.Sleep(300 * time.Millisecond)
	if d, hw := in.snapshot().Delivered, streamHighWater(in, testSub); d != 10 || hw != 10 {
		t.Fatalf("delivered %d, stream high-water %d; want 10 and 10", d, hw)
	}
	close(release)
	waitFor(t, 10*time.Second, "deliveries after acks", func() bool { return in.snapshot().Delivered > 10 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if hw := streamHighWater(in, testSub); hw > 10 {
		t.Fatalf("stream high-water %d > 10", hw)
	}
}

// A nacked message comes back with the same id and delivery attempt 2.
func TestGoClientNackRedelivers(t *testing.T) {
	in := startServer(t, func(o *options) { o.messages = 1 })
	sub := newClient(t).Subscriber(testSub)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var attempts []int
	var msgIDs []string
	err := sub.Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		mu.Lock()
		defer mu.Unlock()
		a := 0
		if m.DeliveryAttempt != nil {
			a = *m.DeliveryAttempt
		}
		attempts = append(attempts, a)
		msgIDs = append(msgIDs, m.ID)
		if len(attempts) == 1 {
			m.Nack()
			return
		}
		m.Ack()
		cancel()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 || msgIDs[0] != msgIDs[1] {
		t.Fatalf("attempts %v ids %v; want [1 2] with one id", attempts, msgIDs)
	}
	waitFor(t, 5*time.Second, "ack counted", func() bool { return in.snapshot().Acks == 1 })
	if s := in.snapshot(); s.Nacks != 1 || s.Redelivered != 1 || s.Delivered != 2 {
		t.Fatalf("stats = %+v", s)
	}
}

// Streams closed with UNAVAILABLE are reopened by the client and delivery
// carries on; acks for messages of a closed stream still count.
func TestGoClientSurvivesStreamCloses(t *testing.T) {
	const n = 5000
	in := startServer(t, func(o *options) {
		o.messages, o.payloadBytes = n, 100
		o.faults.StreamCloseEvery = Duration(100 * time.Millisecond)
		o.batch = 100
	})
	sub := newClient(t).Subscriber(testSub)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	ids := make(map[string]bool)
	err := sub.Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		m.Ack()
		mu.Lock()
		defer mu.Unlock()
		ids[m.ID] = true
		if len(ids) == n {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	s := in.snapshot()
	if len(ids) != n || s.StreamsOpened < 2 || s.InjectedErrors < 1 {
		t.Fatalf("got %d distinct messages of %d; stats %+v", len(ids), n, s)
	}
}
