package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// BenchmarkStreamingPull measures the server pushing messages to a bare
// generated client that acks every response on the stream. The server runs
// in its own process: server-ns/msg is its CPU time per delivered message
// (sending, acks, everything), the cost it takes from a client measured on
// the same machine.
func BenchmarkStreamingPull(b *testing.B) {
	for _, c := range []struct {
		name        string
		size, attrs int
	}{{"100B", 100, 0}, {"1024B", 1024, 0}, {"1024B-2attrs", 1024, 2}} {
		b.Run(c.name, func(b *testing.B) {
			srv := startChild(b, "--payload-bytes", strconv.Itoa(c.size), "--attributes", strconv.Itoa(c.attrs))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sc, err := rawSubscriber(b, srv.addr).StreamingPull(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := sc.Send(&pubsubpb.StreamingPullRequest{Subscription: testSub, MaxOutstandingMessages: 20000, StreamAckDeadlineSeconds: 60}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(c.size))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, t0 := srv.cpu(b), time.Now()
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
			elapsed, cpu := time.Since(t0), srv.cpu(b)-cpu0
			b.ReportMetric(float64(got)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(got), "server-ns/msg")
			b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "server-cores")
		})
	}
}
