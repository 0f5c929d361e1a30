package emulator

import (
	"context"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// BenchmarkPublishStreamingPullAck moves b.N messages of 1 KB: publish
// requests of 1,000 while one stream reads and acks them.
func BenchmarkPublishStreamingPullAck(b *testing.B) {
	f := start(&testing.T{})
	ctx := context.Background()
	f.pub.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/p/topics/top"})
	f.sub.CreateSubscription(ctx, &pubsubpb.Subscription{Name: "projects/p/subscriptions/sub1", Topic: "projects/p/topics/top"})
	st, err := f.sub.StreamingPull(ctx)
	if err != nil {
		b.Fatal(err)
	}
	st.Send(&pubsubpb.StreamingPullRequest{Subscription: "projects/p/subscriptions/sub1", StreamAckDeadlineSeconds: 60, MaxOutstandingMessages: 20000})
	b.SetBytes(1000)
	b.ResetTimer()
	go func() {
		req := &pubsubpb.PublishRequest{Topic: "projects/p/topics/top"}
		for i := 0; i < 1000; i++ {
			req.Messages = append(req.Messages, &pubsubpb.PubsubMessage{Data: make([]byte, 1000)})
		}
		for n := 0; n < b.N; n += 1000 {
			if _, err := f.pub.Publish(ctx, req); err != nil {
				panic(err)
			}
		}
	}()
	for got := 0; got < b.N; {
		r, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		got += len(r.ReceivedMessages)
		if _, err := f.sub.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: "projects/p/subscriptions/sub1", AckIds: ids(r.ReceivedMessages)}); err != nil {
			b.Fatal(err)
		}
	}
}
