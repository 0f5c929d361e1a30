package wire

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// split cuts b at cuts (offsets, any order, repeats give empty segments).
func split(b []byte, cuts []int) [][]byte {
	at := append([]int(nil), cuts...)
	for i := range at {
		at[i] = min(max(at[i], 0), len(b))
	}
	for i := 1; i < len(at); i++ { // insertion sort: a handful of cuts
		for j := i; j > 0 && at[j-1] > at[j]; j-- {
			at[j-1], at[j] = at[j], at[j-1]
		}
	}
	var segs [][]byte
	prev := 0
	for _, c := range at {
		segs = append(segs, b[prev:c:c])
		prev = c
	}
	return append(segs, b[prev:])
}

// parsed is what a Response holds after a parse, as plain values.
func parsed(r *Response, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	out := ""
	for _, m := range r.Messages {
		out += fmt.Sprintf("ack=%q id=%q data=%q key=%q pt=%v/%d.%d da=%d attrs=",
			m.AckID, m.MessageID, m.Data, m.OrderingKey, m.HasPublishTime, m.PublishSeconds, m.PublishNanos, m.DeliveryAttempt)
		for _, a := range m.Attributes {
			out += fmt.Sprintf("%q=%q,", a.Key, a.Value)
		}
		out += "\n"
	}
	return out
}

// sameAsParse checks that ParseSegments over b cut at cuts gives what
// Parse gives over b, errors included.
func sameAsParse(t *testing.T, b []byte, cuts []int, seg *Response) {
	t.Helper()
	var whole Response
	want := parsed(&whole, whole.Parse(b))
	if got := parsed(seg, seg.ParseSegments(split(b, cuts))); got != want {
		t.Fatalf("cuts %v of %d bytes:\nParseSegments: %s\nParse:         %s", cuts, len(b), got, want)
	}
}

func TestParseSegmentsMatchesParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var r Response // reused on purpose, as a stream does
	for range 500 {
		b, err := proto.Marshal(randomResponse(rng))
		if err != nil {
			t.Fatal(err)
		}
		cuts := make([]int, rng.IntN(12))
		for i := range cuts {
			cuts[i] = rng.IntN(len(b) + 1)
		}
		sameAsParse(t, b, cuts, &r)
		// Every single cut, so that every varint and field straddles once.
		if len(b) < 400 {
			for c := range len(b) + 1 {
				sameAsParse(t, b, []int{c}, &r)
			}
		}
	}
}

func TestParseSegmentsFailsLikeParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var r Response
	for range 50 {
		good, _ := proto.Marshal(randomResponse(rng))
		for end := range len(good) { // every truncation, cut in two
			sameAsParse(t, good[:end], []int{end / 2}, &r)
		}
		bad := append([]byte(nil), good...) // a flipped byte: anything can happen
		if len(bad) > 0 {
			bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			sameAsParse(t, bad, []int{rng.IntN(len(bad) + 1), rng.IntN(len(bad) + 1)}, &r)
		}
	}
}

// A message inside one segment is a view of it (nothing copied); one that
// straddles a boundary is a copy, which stays valid after later copies.
func TestParseSegmentsViewsWhatLiesInOneSegment(t *testing.T) {
	resp := &pb.StreamingPullResponse{}
	for i := range 40 {
		resp.ReceivedMessages = append(resp.ReceivedMessages, &pb.ReceivedMessage{
			AckId: fmt.Sprintf("ack-%d", i), Message: &pb.PubsubMessage{Data: make([]byte, 1000), MessageId: fmt.Sprint(i)}})
	}
	b, _ := proto.Marshal(resp)
	segs := split(b, []int{4096, 8192, 12288, 16384, 20480, 24576, 28672, 32768, 36864})
	var r Response
	if err := r.ParseSegments(segs); err != nil {
		t.Fatal(err)
	}
	inside, straddling := 0, 0
	for i, m := range r.Messages {
		in := false
		for _, s := range segs {
			at, lo := uintptr(unsafe.Pointer(&m.Data[0])), uintptr(unsafe.Pointer(unsafe.SliceData(s)))
			if len(s) > 0 && at >= lo && at < lo+uintptr(len(s)) {
				in = true
			}
		}
		if in {
			inside++
		} else {
			straddling++
		}
		if string(m.MessageID) != fmt.Sprint(i) || len(m.Data) != 1000 {
			t.Fatalf("message %d: id %q, %d bytes of data", i, m.MessageID, len(m.Data))
		}
	}
	if inside < 25 || straddling == 0 {
		t.Fatalf("%d messages viewed in place, %d copied; want most in place and the straddlers copied", inside, straddling)
	}
}

// FuzzParseSegments: however a response is cut, ParseSegments decodes
// (or rejects) it exactly as Parse does.
func FuzzParseSegments(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 5 {
		b, _ := proto.Marshal(randomResponse(rng))
		f.Add(b, uint16(len(b)/3), uint16(len(b)/2), uint16(len(b)-1))
	}
	f.Fuzz(func(t *testing.T, b []byte, c1, c2, c3 uint16) {
		var r Response
		sameAsParse(t, b, []int{int(c1), int(c2), int(c3)}, &r)
	})
}

// bench1KB is a response of 1,000 messages of 1 KiB with two attributes,
// as the load server sends them.
func bench1KB() []byte {
	resp := &pb.StreamingPullResponse{}
	for i := range 1000 {
		resp.ReceivedMessages = append(resp.ReceivedMessages, &pb.ReceivedMessage{
			AckId: fmt.Sprintf("%0160d", i),
			Message: &pb.PubsubMessage{Data: make([]byte, 1024), MessageId: fmt.Sprint(i),
				Attributes:  map[string]string{"attr-000": "value-000", "attr-001": "value-001"},
				PublishTime: timestamppb.Now()},
		})
	}
	b, _ := proto.Marshal(resp)
	return b
}

// BenchmarkParseFrames1KB: a 1,000-message response in 16 KiB frames, as
// gRPC delivers it: joined then parsed (the way before ParseSegments),
// against parsed in place.
func BenchmarkParseFrames1KB(b *testing.B) {
	buf := bench1KB()
	var cuts []int
	for c := 16 << 10; c < len(buf); c += 16 << 10 {
		cuts = append(cuts, c)
	}
	segs := split(buf, cuts)
	for _, bc := range []struct {
		name  string
		parse func(r *Response, joined []byte) error
	}{
		{"joined", func(r *Response, joined []byte) error {
			n := 0
			for _, s := range segs {
				n += copy(joined[n:], s)
			}
			return r.Parse(joined)
		}},
		{"segments", func(r *Response, _ []byte) error { return r.ParseSegments(segs) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var r Response
			joined := make([]byte, len(buf))
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.parse(&r, joined); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
			if len(r.Messages) != 1000 {
				b.Fatalf("%d messages", len(r.Messages))
			}
		})
	}
}
