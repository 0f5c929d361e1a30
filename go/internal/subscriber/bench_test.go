package subscriber

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// BenchmarkNext measures the subscriber's own path per batch of 1000
// messages of 1 KiB: decoding the response and appending it to the Arrow
// batch in C memory (as the stream does), Next handing it over, and
// Release. Messages
// are fed in process because pstest delivers only about one message per
// stream every 10 ms; BenchmarkNextPstest covers the wire.
func BenchmarkNext(b *testing.B) {
	benchmarkNext(b, nil, bytes.Repeat([]byte{'x'}, 1024))
}

// BenchmarkNextDecoded is BenchmarkNext in schema mode: 1 KiB JSON
// payloads with five typed members and padding (as bench/loadserver
// --payload-json) decoded natively into `id BIGINT, name STRING, score
// DOUBLE, ok BOOLEAN, at TIMESTAMP`, by the decode pool. Run with -cpu 1 for
// the cost per batch on one core.
func BenchmarkNextDecoded(b *testing.B) {
	head := `{"id": 1234567890123, "name": "user-4711", "score": 1234.5, "ok": true, "at": "2024-05-06T07:08:09.123456Z", "pad": "`
	payload := append([]byte(head), bytes.Repeat([]byte{'p'}, 1024-len(head)-2)...)
	payload = append(payload, `"}`...)
	target := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	benchmarkNext(b, &decode.DecoderConfig{Format: "json", Schema: schemaB64(b, target)}, payload)
}

func benchmarkNext(b *testing.B, dec *decode.DecoderConfig, payload []byte) {
	srv := newServer(b)
	cfg := testConfig(srv)
	cfg.Decoder = dec
	s := openTest(b, cfg, nil)
	const batch = 1000
	msgs := make([]*pb.ReceivedMessage, batch)
	for i := range msgs {
		msgs[i] = &pb.ReceivedMessage{
			AckId: fmt.Sprintf("%0160d", i),
			Message: &pb.PubsubMessage{
				MessageId:   fmt.Sprint(i),
				Data:        payload,
				Attributes:  map[string]string{"source": "bench", "seq": fmt.Sprint(i)},
				PublishTime: timestamppb.Now(),
			},
		}
	}
	enc, err := proto.Marshal(&pb.StreamingPullResponse{ReceivedMessages: msgs})
	if err != nil {
		b.Fatal(err)
	}
	var res wire.Response
	ctx := context.Background()
	b.SetBytes(batch * 1024)
	b.ReportAllocs()
	for b.Loop() {
		if err := res.Parse(enc); err != nil { // as the stream does
			b.Fatal(err)
		}
		now := time.Now()
		s.deliver(res.Messages, now, now)
		out, err := s.Next(ctx, batch, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if n := out.AckIDs.Len(); n != batch {
			b.Fatalf("got %d rows", n)
		}
		ids := make([]string, batch)
		for i := range ids {
			ids[i] = out.AckIDs.Value(i)
		}
		s.Release(ids)
		out.Release()
	}
}

// BenchmarkNextPstest pulls through real StreamingPull streams from
// pstest; its delivery loop, not the subscriber, sets the pace.
func BenchmarkNextPstest(b *testing.B) {
	srv := newServer(b)
	cfg := testConfig(srv)
	cfg.Streams = 4
	s := openTest(b, cfg, nil)
	const batch = 100
	payload := bytes.Repeat([]byte{'x'}, 1024)
	b.SetBytes(batch * 1024)
	for b.Loop() {
		b.StopTimer()
		for range batch {
			srv.Publish(testTopic, payload, nil)
		}
		b.StartTimer()
		got := nextRows(b, s, batch, time.Minute)
		if err := s.Ack(ackIDs(got)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeliverCold is BenchmarkNext over many distinct responses as a
// load server sends them (~3 MiB each, in 16 KiB gRPC frames, 72 MiB in
// all: more than the L3 cache of the machines we measure on), so that each
// response is parsed and copied from memory that is not in cache, as in a
// Spark run. BenchmarkNext reuses one response, which stays in cache.
func BenchmarkDeliverCold(b *testing.B) {
	srv := newServer(b)
	cfg := testConfig(srv)
	s := openTest(b, cfg, nil)
	const perResponse, responses = 2800, 24
	payload := bytes.Repeat([]byte{'x'}, 1024)
	frames := make([][][]byte, responses)
	seq := 0
	for r := range frames {
		msgs := make([]*pb.ReceivedMessage, perResponse)
		for i := range msgs {
			seq++
			msgs[i] = &pb.ReceivedMessage{
				AckId: fmt.Sprintf("%0160d", seq),
				Message: &pb.PubsubMessage{
					MessageId:   fmt.Sprint(seq),
					Data:        payload,
					Attributes:  map[string]string{"attr-000": "value-000", "attr-001": "value-001"},
					PublishTime: timestamppb.Now(),
				},
			}
		}
		enc, err := proto.Marshal(&pb.StreamingPullResponse{ReceivedMessages: msgs})
		if err != nil {
			b.Fatal(err)
		}
		for len(enc) > 0 { // each frame a buffer of its own, as gRPC's
			n := min(len(enc), 16<<10)
			frames[r] = append(frames[r], bytes.Clone(enc[:n]))
			enc = enc[n:]
		}
	}
	var res wire.Response
	ctx := context.Background()
	b.SetBytes(perResponse * 1024)
	k := 0
	ids := make([]string, 0, 4000)
	for b.Loop() {
		if err := res.ParseSegments(frames[k%responses]); err != nil {
			b.Fatal(err)
		}
		k++
		now := time.Now()
		s.deliver(res.Messages, now, now)
		for got := 0; got < perResponse; {
			out, err := s.Next(ctx, perResponse-got, time.Second)
			if err != nil {
				b.Fatal(err)
			}
			ids = ids[:0]
			for i := range out.AckIDs.Len() {
				ids = append(ids, out.AckIDs.Value(i))
			}
			got += len(ids)
			s.Release(ids)
			out.Release()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perResponse), "ns/msg")
}
