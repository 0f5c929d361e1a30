package subscriber

import "sync/atomic"

// Stats are a subscriber's counters since Open. Held, Buffered, QuietMs,
// BlockedMs and Streams are current; the others only grow. The C API copies them into struct
// PgSubscriberStats (go/include/pubsubgo.h), which lists the same int64
// fields in the same order under their JSON names.
type Stats struct {
	Pulled           int64 `json:"pulled"`            // messages received
	HandedOut        int64 `json:"handed_out"`        // messages returned by Next
	Held             int64 `json:"held"`              // received, not yet acked/nacked/released/expired
	Acked            int64 `json:"acked"`             // ack ids acknowledged
	Nacked           int64 `json:"nacked"`            // ack ids nacked, by the user or by Close
	Extended         int64 `json:"extended"`          // lease extensions sent (one per ack id)
	Redeliveries     int64 `json:"redeliveries"`      // messages received more than once
	DecodeErrors     int64 `json:"decode_errors"`     // rows a decoder could not decode
	BytesPulled      int64 `json:"bytes_pulled"`      // message bytes received (data, attributes, ids)
	StreamsRestarted int64 `json:"streams_restarted"` // stream reconnects after an error, or after a pause too long for what was in flight (pipe.go)
	NackedOnClose    int64 `json:"nacked_on_close"`   // of Nacked: buffered messages Close gave back
	Buffered         int64 `json:"buffered"`          // received, not yet handed out (current)
	// QuietMs is how long every stream has been in a live session, flow
	// control open, with no message arriving (current; see quietClock).
	QuietMs int64 `json:"quiet_ms"`
	// Exactly-once delivery: ack ids the service refused for good (not
	// acked; the message comes back), and likewise for modacks and nacks.
	AckRejected    int64 `json:"ack_rejected"`
	ModackRejected int64 `json:"modack_rejected"`
	// A subscriber that cannot receive looks like an empty subscription
	// unless it says so (stallClock): time flow control was full (streams
	// stop reading), time at least one stream was out of a live session
	// (connecting, backing off, reopening), both in total since Open until
	// Close began; and how long it has been unable to receive for either
	// reason without a break (current; 0 while it can receive).
	FlowFullMs    int64 `json:"flow_full_ms"`
	StreamsDownMs int64 `json:"streams_down_ms"`
	BlockedMs     int64 `json:"blocked_ms"`
	// Late counts messages published after Config.ArrivalCutoffUs: of
	// Pulled, released where they arrived, never held or handed out.
	Late int64 `json:"late"`
	// Streams is how many StreamingPull streams the subscriber runs
	// (current): Config.Streams, or more once it caught up (catchup.go).
	Streams int64 `json:"streams"`
}

type counters struct {
	pulled, handedOut, acked, nacked, extended, redeliveries,
	decodeErrors, bytesPulled, streamsRestarted, nackedOnClose, ackRejected, modackRejected, late atomic.Int64
}

// countModack counts a modack's outcome: done into c (if any), rejections.
func (c *counters) countModack(o AckOutcome, done *atomic.Int64) {
	if done != nil {
		done.Add(int64(o.Done))
	}
	c.modackRejected.Add(int64(o.RejectedCount()))
}

func (c *counters) snapshot(held int64) Stats {
	return Stats{
		Pulled:           c.pulled.Load(),
		HandedOut:        c.handedOut.Load(),
		Held:             held,
		Acked:            c.acked.Load(),
		Nacked:           c.nacked.Load(),
		Extended:         c.extended.Load(),
		Redeliveries:     c.redeliveries.Load(),
		DecodeErrors:     c.decodeErrors.Load(),
		BytesPulled:      c.bytesPulled.Load(),
		StreamsRestarted: c.streamsRestarted.Load(),
		NackedOnClose:    c.nackedOnClose.Load(),
		AckRejected:      c.ackRejected.Load(),
		ModackRejected:   c.modackRejected.Load(),
		Late:             c.late.Load(),
	}
}
