package main

import (
	"sync/atomic"
	"time"
)

// stats are the server's counters. Hot paths add per batch or per RPC,
// never per message.
type stats struct {
	since atomic.Int64 // unix nanos of start or last reset

	delivered      atomic.Int64 // messages sent, redeliveries included
	deliveredBytes atomic.Int64 // payload bytes of those
	redelivered    atomic.Int64
	acks           atomic.Int64 // ack ids received (stream and unary)
	ackMisses      atomic.Int64 // ... that matched nothing outstanding
	nacks          atomic.Int64 // modacks with deadline 0
	modacks        atomic.Int64 // modacks with deadline > 0
	expired        atomic.Int64
	published      atomic.Int64
	publishedBytes atomic.Int64 // data bytes of published messages
	publishRPCs    atomic.Int64
	ackRPCs        atomic.Int64
	modackRPCs     atomic.Int64
	pullRPCs       atomic.Int64
	streamsOpened  atomic.Int64
	streamsActive  atomic.Int64 // a gauge: not reset
	injected       atomic.Int64 // injected RPC errors and stream closures
}

// Snapshot is the JSON form of the counters served at /stats.
type Snapshot struct {
	Seconds         float64 `json:"seconds"`
	Delivered       int64   `json:"delivered"`
	DeliveredBytes  int64   `json:"delivered_bytes"`
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	Redelivered     int64   `json:"redelivered"`
	Acks            int64   `json:"acks"`
	AckMisses       int64   `json:"ack_misses"`
	Nacks           int64   `json:"nacks"`
	Modacks         int64   `json:"modacks"`
	Expired         int64   `json:"expired"`
	Outstanding     int64   `json:"outstanding"`
	Published       int64   `json:"published"`
	PublishedBytes  int64   `json:"published_bytes"`
	PublishedPerSec float64 `json:"published_per_sec"`
	PublishRPCs     int64   `json:"publish_rpcs"`
	AckRPCs         int64   `json:"ack_rpcs"`
	ModackRPCs      int64   `json:"modack_rpcs"`
	PullRPCs        int64   `json:"pull_rpcs"`
	StreamsOpened   int64   `json:"streams_opened"`
	StreamsActive   int64   `json:"streams_active"`
	InjectedErrors  int64   `json:"injected_errors"`
}

func newStats() *stats {
	s := &stats{}
	s.since.Store(time.Now().UnixNano())
	return s
}

func (s *stats) snapshot(outstanding int64) Snapshot {
	secs := time.Since(time.Unix(0, s.since.Load())).Seconds()
	snap := Snapshot{
		Seconds:        secs,
		Delivered:      s.delivered.Load(),
		DeliveredBytes: s.deliveredBytes.Load(),
		Redelivered:    s.redelivered.Load(),
		Acks:           s.acks.Load(),
		AckMisses:      s.ackMisses.Load(),
		Nacks:          s.nacks.Load(),
		Modacks:        s.modacks.Load(),
		Expired:        s.expired.Load(),
		Outstanding:    outstanding,
		Published:      s.published.Load(),
		PublishedBytes: s.publishedBytes.Load(),
		PublishRPCs:    s.publishRPCs.Load(),
		AckRPCs:        s.ackRPCs.Load(),
		ModackRPCs:     s.modackRPCs.Load(),
		PullRPCs:       s.pullRPCs.Load(),
		StreamsOpened:  s.streamsOpened.Load(),
		StreamsActive:  s.streamsActive.Load(),
		InjectedErrors: s.injected.Load(),
	}
	if secs > 0 {
		snap.DeliveredPerSec = float64(snap.Delivered) / secs
		snap.PublishedPerSec = float64(snap.Published) / secs
	}
	return snap
}

// reset zeroes the counters (not the gauges) and restarts the clock.
func (s *stats) reset() {
	for _, c := range []*atomic.Int64{
		&s.delivered, &s.deliveredBytes, &s.redelivered, &s.acks, &s.ackMisses,
		&s.nacks, &s.modacks, &s.expired, &s.published, &s.publishedBytes,
		&s.publishRPCs, &s.ackRPCs, &s.modackRPCs, &s.pullRPCs,
		&s.streamsOpened, &s.injected,
	} {
		c.Store(0)
	}
	s.since.Store(time.Now().UnixNano())
}
