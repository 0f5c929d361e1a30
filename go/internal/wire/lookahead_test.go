package wire

import (
	"fmt"
	"testing"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The lookahead cursor runs lookaheadMessages messages ahead of the parser, one
// message per advance, across segment boundaries, and stops at the end.
func TestLookaheadCursorRunsAheadByWholeMessages(t *testing.T) {
	const n = 12
	resp := &pb.StreamingPullResponse{}
	for i := range n {
		resp.ReceivedMessages = append(resp.ReceivedMessages, &pb.ReceivedMessage{
			AckId:   fmt.Sprintf("ack-%d", i),
			Message: &pb.PubsubMessage{Data: make([]byte, 100+37*i), MessageId: fmt.Sprint(i)},
		})
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	// Where each message starts, and the end.
	var starts []int
	for off := 0; off < len(b); {
		starts = append(starts, off)
		_, _, tl := protowire.ConsumeTag(b[off:])
		_, vl := protowire.ConsumeBytes(b[off+tl:])
		off += tl + vl
	}
	starts = append(starts, len(b))

	segs := split(b, []int{7, 300, 301, 1000, 1500})
	c := segCursor{segs: segs, cur: segs[0], left: len(b)}
	var p lookaheadCursor
	p.start(c)
	for k := lookaheadMessages; k <= n; k++ {
		if at := len(b) - p.c.left; at != starts[k] {
			t.Fatalf("after %d messages the cursor is at %d, want %d", k, at, starts[k])
		}
		p.advance()
	}
	if !p.done || p.c.left != 0 {
		t.Fatalf("done %v with %d bytes left at the end", p.done, p.c.left)
	}
	p.advance() // a no-op once done
}

// Anything but a length-delimited top-level field stops the cursor (the
// parser reports it); a length beyond the end stops it before reading past.
func TestLookaheadCursorStopsAtWhatItDoesNotExpect(t *testing.T) {
	for name, b := range map[string][]byte{
		"varint field":   protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 5),
		"length too big": protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), 1000),
		"truncated tag":  {0x80},
	} {
		c := segCursor{segs: [][]byte{b}, cur: b, left: len(b)}
		var p lookaheadCursor
		p.start(c)
		if !p.done {
			t.Errorf("%s: the cursor did not stop", name)
		}
	}
}
