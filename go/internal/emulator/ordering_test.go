package emulator

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// keyChecker follows, per ordering key, how many of its messages were
// acked (they are acked in order, so that is also the index the key's next
// delivery must start from), and reports the first delivery out of order.
type keyChecker struct {
	mu    sync.Mutex
	next  map[string]int
	acked int
	err   error
	done  chan struct{}
	total int
}

// batch checks one response's messages and decides, per key, to ack a
// prefix of the key's messages in it and nack (or let expire) the rest.
// It returns the ack ids to ack and to nack.
func (kc *keyChecker) batch(rng *rand.Rand, msgs []*pubsubpb.ReceivedMessage) (acks, nacks []string) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	byKey := map[string][]*pubsubpb.ReceivedMessage{}
	var order []string
	for _, m := range msgs {
		k := m.Message.OrderingKey
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], m)
	}
	for _, k := range order {
		ms := byKey[k]
		want := kc.next[k]
		var got []string
		for _, m := range ms {
			got = append(got, strings.TrimPrefix(string(m.Message.Data), k+"/"))
		}
		for i, m := range ms {
			idx, _ := strconv.Atoi(strings.TrimPrefix(string(m.Message.Data), k+"/"))
			if idx != want+i && kc.err == nil {
				kc.err = fmt.Errorf("key %s: delivered %v, want it to start at %d (acked so far %d)", k, got, want, want)
			}
		}
		cut := len(ms)
		if rng.Intn(5) == 0 { // nack from a random point on
			cut = rng.Intn(len(ms))
		}
		for _, m := range ms[:cut] {
			acks = append(acks, m.AckId)
		}
		for _, m := range ms[cut:] {
			nacks = append(nacks, m.AckId)
		}
		kc.next[k] = want + cut
		kc.acked += cut
	}
	if (kc.acked == kc.total || kc.err != nil) && kc.done != nil {
		close(kc.done)
		kc.done = nil
	}
	return acks, nacks
}

// TestOrderedKeysStayInOrderUnderConcurrencyAndNacks publishes many keys
// from several goroutines while streams with small flow control (and a Pull
// loop that lets some leases expire) receive, nack at random and ack: every
// key's deliveries must continue exactly where its acked prefix ends.
func TestOrderedKeysStayInOrderUnderConcurrencyAndNacks(t *testing.T) {
	f := start(t)
	f.topicSub(t, &pubsubpb.Subscription{EnableMessageOrdering: true})
	const (
		keys       = 40
		perKey     = 60
		publishers = 4
	)
	kc := &keyChecker{next: map[string]int{}, done: make(chan struct{}), total: keys * perKey}
	done := kc.done
	ctx, cancel := context.WithTimeout(f.ctx, 25*time.Second)
	defer cancel()
	const sub = "projects/p/subscriptions/sub1"

	var wg sync.WaitGroup
	for p := 0; p < publishers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(p)))
			idx := map[string]int{}
			var mine []string
			for k := p; k < keys; k += publishers {
				mine = append(mine, fmt.Sprintf("key%02d", k))
			}
			for sent := 0; sent < len(mine)*perKey; {
				req := &pubsubpb.PublishRequest{Topic: "projects/p/topics/top"}
				for n := 1 + rng.Intn(12); n > 0; n-- {
					k := mine[rng.Intn(len(mine))]
					if idx[k] == perKey {
						continue
					}
					req.Messages = append(req.Messages, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, "%s/%d", k, idx[k]), OrderingKey: k})
					idx[k]++
					sent++
				}
				if len(req.Messages) == 0 {
					continue
				}
				if _, err := f.pub.Publish(ctx, req); err != nil {
					if ctx.Err() == nil {
						t.Errorf("publish: %v", err)
					}
					return
				}
				if rng.Intn(4) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}(p)
	}
	for s := 0; s < 3; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(100 + s)))
			st, err := f.sub.StreamingPull(ctx)
			if err != nil {
				t.Errorf("stream: %v", err)
				return
			}
			if err := st.Send(&pubsubpb.StreamingPullRequest{Subscription: sub, StreamAckDeadlineSeconds: 60,
				MaxOutstandingMessages: int64(3 + 4*s)}); err != nil {
				t.Errorf("stream send: %v", err)
				return
			}
			for {
				r, err := st.Recv()
				if err != nil {
					return // the test's context ends it
				}
				acks, nacks := kc.batch(rng, r.ReceivedMessages)
				req := &pubsubpb.StreamingPullRequest{AckIds: acks, ModifyDeadlineAckIds: nacks, ModifyDeadlineSeconds: make([]int32, len(nacks))}
				if err := st.Send(req); err != nil {
					return
				}
			}
		}(s)
	}
	wg.Add(1)
	go func() { // a Pull loop: small pulls, and now and then a lease left to expire
		defer wg.Done()
		rng := rand.New(rand.NewSource(200))
		for ctx.Err() == nil {
			r, err := f.sub.Pull(ctx, &pubsubpb.PullRequest{Subscription: sub, MaxMessages: int32(1 + rng.Intn(5))})
			if err != nil {
				return
			}
			acks, nacks := kc.batch(rng, r.ReceivedMessages)
			if len(acks) > 0 {
				f.sub.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: sub, AckIds: acks})
			}
			if len(nacks) > 0 {
				secs := int32(0)
				if rng.Intn(10) == 0 {
					secs = 1 // expires in 1 s instead
				}
				f.sub.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: sub, AckIds: nacks, AckDeadlineSeconds: secs})
			}
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	kc.mu.Lock()
	defer kc.mu.Unlock()
	if kc.err != nil {
		t.Fatal(kc.err)
	}
	if kc.acked != kc.total {
		t.Fatalf("acked %d of %d messages within the time allowed", kc.acked, kc.total)
	}
}
