package emulator

import (
	"strconv"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// A response carries at most maxBatchMessages messages and about
// maxBatchBytes: under the 4 MiB gRPC clients accept by default, and small
// enough that several streams of one subscription share a backlog.
const (
	maxBatchMessages = 1000
	maxBatchBytes    = 3 << 20
	// perMessageOverhead approximates a ReceivedMessage's framing, ack id,
	// message id and publish time on the wire.
	perMessageOverhead = 64
)

// claim leases up to limit ready messages to c, within c's flow control
// (the service lets a stream with nothing outstanding take one message
// larger than its byte limit), and appends them to out.
func (s *subscription) claim(c *consumer, limit int, now time.Time, out []*pubsubpb.ReceivedMessage) []*pubsubpb.ReceivedMessage {
	var batchKeys map[*keyState]bool
	var dues []due
	bytes := 0
	for len(out) < limit && s.readyQ.len() > 0 {
		if c.maxMsgs > 0 && c.outMsgs >= c.maxMsgs {
			break
		}
		it := s.readyQ.front()
		e, ks := it.e, it.ks
		if ks != nil {
			// A key: its next message, unless the key is out to another
			// consumer or an earlier response (it is queued again when
			// released) or has nothing left.
			if ks.outstanding > 0 && !batchKeys[ks] {
				s.readyQ.popFront()
				ks.queued = false
				continue
			}
			if e = ks.head(); e == nil {
				s.readyQ.popFront()
				ks.queued = false
				if ks.outstanding == 0 {
					delete(s.keys, ks.name)
				}
				continue
			}
		} else if e.state != ready {
			s.readyQ.popFront()
			continue
		}
		size := e.msg.size
		if c.maxBytes > 0 && c.outBytes > 0 && c.outBytes+size > c.maxBytes {
			break
		}
		if len(out) > 0 && bytes+int(size)+perMessageOverhead > maxBatchBytes {
			break
		}
		if ks != nil {
			// Several of a key may go in one response; the key keeps its
			// place at the front until this response is full.
			ks.pending[0] = nil
			ks.pending = ks.pending[1:]
			ks.outstanding++
			if batchKeys == nil {
				batchKeys = map[*keyState]bool{}
			}
			batchKeys[ks] = true
		} else {
			s.readyQ.popFront()
		}
		e.gen++
		e.state = leased
		e.owner = c
		e.deadline = now.Add(c.ackDeadline)
		c.outMsgs++
		c.outBytes += size
		bytes += int(size) + perMessageOverhead
		dues = append(dues, due{e, e.gen})
		rm := &pubsubpb.ReceivedMessage{AckId: s.ackID(e), Message: e.msg.pb}
		if s.set.deadLetter != "" {
			rm.DeliveryAttempt = int32(e.gen)
		}
		out = append(out, rm)
	}
	if len(dues) > 0 {
		s.pushTimer(timer{at: now.Add(c.ackDeadline), kind: leaseEnds, due: dues})
	}
	return out
}

// ackID is "sub.seq.gen": which subscription, which message, which delivery.
func (s *subscription) ackID(e *entry) string {
	b := make([]byte, 0, 32)
	b = strconv.AppendUint(b, s.id, 36)
	b = append(b, '.')
	b = strconv.AppendUint(b, e.seq, 36)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(e.gen), 36)
	return string(b)
}

// parseAckID splits an ack id; ok is false for one this emulator never made.
func parseAckID(id string) (sub, seq uint64, gen uint32, ok bool) {
	var parts [3]uint64
	for i := 0; i < 3; i++ {
		end := len(id)
		if i < 2 {
			end = indexByte(id, '.')
			if end < 0 {
				return 0, 0, 0, false
			}
		}
		v, err := strconv.ParseUint(id[:end], 36, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		parts[i] = v
		if i < 2 {
			id = id[end+1:]
		}
	}
	return parts[0], parts[1], uint32(parts[2]), true
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
