package wire

import (
	"bytes"
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// gRPC hands a received message over as the buffers of the HTTP/2 data
// frames that carried it (at most 16 KiB each), not as one slice. Joining
// them before Parse copied every received byte once more: 1.9% of all CPU
// of a Spark read at 1 KiB payloads (bench/tools/spark_cpu.py pubsub-go-defaults
// --perf). ParseSegments reads the frames where they are: a
// ReceivedMessage that lies within one frame (most of them: 1 KiB messages
// in 16 KiB frames) is viewed in place, and only one that straddles a frame
// boundary is copied, into the Response's scratch space.

// minScratch is the smallest scratch chunk: room for the straddling
// messages of a 1 MiB response at 1 KiB payloads (~64 frames, one
// straddler each), so a steady stream allocates no new chunk.
const minScratch = 64 << 10

// ParseSegments decodes the response held in segs, back to back, replacing
// r's contents like Parse. The messages' slices point into segs (or into
// r's scratch space) and are valid while segs are and until the next
// parse. Anything this fast path does not expect (a truncated field, a
// group, a malformed message) is decoded by Parse over a joined copy, so
// the result and any error are exactly Parse's.
func (r *Response) ParseSegments(segs [][]byte) error {
	switch len(segs) {
	case 0:
		return r.Parse(nil)
	case 1:
		return r.Parse(segs[0])
	}
	r.Messages = r.Messages[:0]
	r.attrs = r.attrs[:0]
	r.scratch = r.scratch[:0]
	c := segCursor{segs: segs, cur: segs[0]}
	for _, s := range segs {
		c.left += len(s)
	}
	var la lookaheadCursor
	la.start(c)
	for c.left > 0 {
		tag, ok := c.varint()
		if !ok {
			return r.parseJoined(segs)
		}
		num, typ := protowire.DecodeTag(tag)
		if tag>>3 > math.MaxInt32 || num < protowire.MinValidNumber {
			return r.parseJoined(segs) // an invalid field number
		}
		switch typ {
		case protowire.BytesType:
			n, ok := c.varint()
			if !ok || n > uint64(c.left) {
				return r.parseJoined(segs)
			}
			if num != respReceivedMessages {
				c.skip(int(n))
				continue
			}
			v := c.take(int(n), &r.scratch)
			la.advance()
			r.Messages = append(r.Messages, Message{})
			if err := r.parseReceived(v, &r.Messages[len(r.Messages)-1]); err != nil {
				return r.parseJoined(segs)
			}
		case protowire.VarintType:
			if _, ok := c.varint(); !ok {
				return r.parseJoined(segs)
			}
		case protowire.Fixed32Type, protowire.Fixed64Type:
			n := 4
			if typ == protowire.Fixed64Type {
				n = 8
			}
			if n > c.left {
				return r.parseJoined(segs)
			}
			c.skip(n)
		default: // groups, invalid types
			return r.parseJoined(segs)
		}
	}
	r.pointAttributes()
	return nil
}

// parseJoined is ParseSegments' way out: Parse over one copy of segs.
func (r *Response) parseJoined(segs [][]byte) error {
	return r.Parse(bytes.Join(segs, nil))
}

// segCursor reads segs as one stream of bytes.
type segCursor struct {
	segs [][]byte
	i    int    // segs[i] holds the next byte, unless cur is empty
	cur  []byte // what is left of segs[i]
	left int    // bytes left in all segments
}

// settle makes cur the segment holding the next byte.
func (c *segCursor) settle() {
	for len(c.cur) == 0 && c.i+1 < len(c.segs) {
		c.i++
		c.cur = c.segs[c.i]
	}
}

// varint reads one varint; false if it is malformed or truncated.
func (c *segCursor) varint() (uint64, bool) {
	c.settle()
	if v, n := protowire.ConsumeVarint(c.cur); n > 0 {
		c.cur = c.cur[n:]
		c.left -= n
		return v, true
	}
	// It straddles a boundary (or is malformed): read it from a copy.
	var tmp [binary.MaxVarintLen64]byte
	k := c.peek(tmp[:])
	v, n := protowire.ConsumeVarint(tmp[:k])
	if n < 0 {
		return 0, false
	}
	c.skip(n)
	return v, true
}

// peek copies up to len(dst) of the next bytes into dst without consuming
// them; it returns how many it copied.
func (c *segCursor) peek(dst []byte) int {
	n := copy(dst, c.cur)
	for j := c.i + 1; n < len(dst) && j < len(c.segs); j++ {
		n += copy(dst[n:], c.segs[j])
	}
	return n
}

// skip consumes n bytes; n must not exceed left.
func (c *segCursor) skip(n int) {
	c.left -= n
	for {
		c.settle()
		if n <= len(c.cur) {
			c.cur = c.cur[n:]
			return
		}
		n -= len(c.cur)
		c.cur = nil
	}
}

// take consumes the next n bytes (n ≤ left) and returns them: a view of
// the segment if they lie within one, else a copy appended to *scratch.
// A full scratch is replaced, never grown in place, so the copies handed
// out before stay where they are (the slices pointing at them keep the old
// chunk alive).
func (c *segCursor) take(n int, scratch *[]byte) []byte {
	c.settle()
	if n <= len(c.cur) {
		v := c.cur[:n:n]
		c.cur = c.cur[n:]
		c.left -= n
		return v
	}
	s := *scratch
	if cap(s)-len(s) < n {
		s = make([]byte, 0, max(2*cap(s), n, minScratch))
	}
	start := len(s)
	s = s[:start+n]
	c.peek(s[start:])
	c.skip(n)
	*scratch = s
	return s[start : start+n : start+n]
}
