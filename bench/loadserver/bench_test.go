package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// BenchmarkStreamingPull measures the server pushing messages to a bare
// generated client that acks every response on the stream (client and
// server share the machine, so this is a lower bound on server capacity).
func BenchmarkStreamingPull(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			o := defaultOptions()
			o.payloadBytes = size
			in, err := start(o)
			if err != nil {
				b.Fatal(err)
			}
			defer in.close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sc, err := rawSubscriber(b, in.addr).StreamingPull(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := sc.Send(&pubsubpb.StreamingPullRequest{Subscription: testSub, MaxOutstandingMessages: 20000, StreamAckDeadlineSeconds: 60}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			t0 := time.Now()
			got := 0
			for got < b.N {
				resp, err := sc.Recv()
				if err != nil {
					b.Fatal(err)
				}
				got += len(resp.ReceivedMessages)
				if err := sc.Send(&pubsubpb.StreamingPullRequest{AckIds: ackIDs(resp.ReceivedMessages)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(got)/time.Since(t0).Seconds(), "msgs/s")
		})
	}
}
