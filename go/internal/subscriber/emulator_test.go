package subscriber

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// TestGoogleEmulator runs the core semantics against Google's emulator
// (the reference for behaviour) when PUBSUB_GO_TEST_EMULATOR=host:port
// names a running one; pstest covers the rest.
func TestGoogleEmulator(t *testing.T) {
	host := os.Getenv("PUBSUB_GO_TEST_EMULATOR")
	if host == "" {
		t.Skip("PUBSUB_GO_TEST_EMULATOR not set")
	}
	ctx := context.Background()
	opts := clientopt.Options{EmulatorHost: host}
	topics, err := vkit.NewTopicAdminClient(ctx, opts.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer topics.Close()
	subs, err := vkit.NewSubscriptionAdminClient(ctx, opts.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer subs.Close()
	suffix := time.Now().UnixNano()
	topic := fmt.Sprintf("projects/p/topics/t%d", suffix)
	sub := fmt.Sprintf("projects/p/subscriptions/s%d", suffix)
	if _, err := topics.CreateTopic(ctx, &pb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := subs.CreateSubscription(ctx, &pb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	pub := func(n int) {
		msgs := make([]*pb.PubsubMessage, n)
		for i := range msgs {
			msgs[i] = &pb.PubsubMessage{Data: []byte(fmt.Sprint("m", i)), Attributes: map[string]string{"i": fmt.Sprint(i)}}
		}
		if _, err := topics.Publish(ctx, &pb.PublishRequest{Topic: topic, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Options: opts, Subscription: sub, Streams: 2, AckDeadlineSeconds: 10}

	missing := cfg
	missing.Subscription = sub + "-missing"
	if _, err := Open(ctx, missing); rpc.Code(err).String() != "NotFound" {
		t.Errorf("Open of a missing subscription = %v, want NOT_FOUND", err)
	}

	s := openTest(t, cfg, nil)
	pub(10)
	got := nextRows(t, s, 4, 10*time.Second)
	nackedAt := time.Now()
	if err := s.Nack(ackIDs(got[:1])); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(ackIDs(got[1:])); err != nil {
		t.Fatal(err)
	}
	// Past the 10 s deadline: the buffered and the unacked handed-out
	// messages are leased, the nacked one came back once.
	waitFor(t, 10*time.Second, "all pulled", func() bool { return s.Stats().Pulled == 11 })
	if took := time.Since(nackedAt); took > 5*time.Second {
		t.Errorf("the nacked message took %v to come back", took)
	}
	held := nextRows(t, s, 2, 5*time.Second)
	time.Sleep(12 * time.Second)
	if st := s.Stats(); st.Redeliveries != 1 || st.Pulled != 11 || st.Extended == 0 {
		t.Errorf("stats %+v, want 1 redelivery (the nack), 11 pulled, extensions", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The 5 never handed out come back promptly; the 2 held do not.
	other := openTest(t, cfg, nil)
	back := nextRows(t, other, 5, 5*time.Second)
	for _, r := range back {
		for _, h := range held {
			if r.id == h.id {
				t.Errorf("handed-out message %s came back", r.id)
			}
		}
	}
	if err := other.Ack(ackIDs(back)); err != nil {
		t.Fatal(err)
	}
	b, err := other.Next(ctx, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if extra := rows(t, b); len(extra) != 0 {
		t.Errorf("%d handed-out messages came back before their deadline", len(extra))
	}
}
