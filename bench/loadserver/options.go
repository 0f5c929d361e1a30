package main

import (
	"flag"
	"fmt"
	"net"
	"time"
)

// options configure a load server; main fills them from flags.
type options struct {
	addr     string // gRPC listen address, loopback only
	httpAddr string // stats/config HTTP address; empty: none

	payloadBytes int
	payloadJSON  bool // payload is a JSON object (decode benchmarks), else letters
	attributes   int
	orderingKeys int
	messages     uint64 // new messages per subscription; 0: unlimited

	batch            int // most messages per StreamingPullResponse
	maxResponseBytes int // and most bytes
	autoCreate       bool
	heartbeat        time.Duration // empty response on an idle stream
	expiryScan       time.Duration // how often ack deadlines are checked
	// backlogAtStart stamps every synthetic message with the server's start
	// time as its publish time: a finite backlog (-messages) that existed
	// before any reader started, as an AvailableNow query expects one.
	backlogAtStart bool
	// rate > 0: new messages per second per subscription, each published
	// (publish_time) when it becomes available; StreamingPull only.
	rate float64

	faults Faults
}

func defaultOptions() options {
	return options{
		addr:             "127.0.0.1:0",
		payloadBytes:     1024,
		batch:            1000,
		maxResponseBytes: 3 << 20, // under the 4 MiB gRPC default of clients that keep it
		autoCreate:       true,
		heartbeat:        5 * time.Second,
		expiryScan:       time.Second,
		faults:           defaultFaults(),
	}
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.addr, "addr", o.addr, "gRPC listen address (loopback only; port 0 picks a free one)")
	fs.StringVar(&o.httpAddr, "http", o.httpAddr, "HTTP address for /stats, /reset, /config (loopback only; empty: off)")
	fs.IntVar(&o.payloadBytes, "payload-bytes", o.payloadBytes, "data bytes per synthetic message")
	fs.BoolVar(&o.payloadJSON, "payload-json", o.payloadJSON, "payload is a JSON object of about --payload-bytes: id, name, score, ok, at and padding (bench/tools/decode_bench.py)")
	fs.IntVar(&o.attributes, "attributes", o.attributes, "attributes per synthetic message")
	fs.IntVar(&o.orderingKeys, "ordering-keys", o.orderingKeys, "distinct ordering keys, assigned round-robin (0: none)")
	fs.Uint64Var(&o.messages, "messages", o.messages, "new messages per subscription (0: unlimited)")
	fs.IntVar(&o.batch, "batch", o.batch, "most messages per StreamingPull response")
	fs.IntVar(&o.maxResponseBytes, "max-response-bytes", o.maxResponseBytes, "most bytes per StreamingPull response")
	fs.BoolVar(&o.autoCreate, "auto-create", o.autoCreate, "create unknown topics/subscriptions on Publish/Pull instead of NOT_FOUND")
	fs.DurationVar(&o.heartbeat, "heartbeat", o.heartbeat, "send an empty response on a stream idle this long")
	fs.BoolVar(&o.backlogAtStart, "backlog-at-start", o.backlogAtStart, "publish time of synthetic messages: the server's start (default: when sent)")
	fs.Float64Var(&o.rate, "rate", o.rate, "new messages per second per subscription, each with publish_time = when it became available (StreamingPull only; 0: as fast as the client takes them)")
	fs.DurationVar(&o.expiryScan, "expiry-scan", o.expiryScan, "how often expired ack deadlines are redelivered")
	fs.Float64Var(&o.faults.PublishErrorRate, "publish-error-rate", o.faults.PublishErrorRate, "fraction of Publish RPCs that fail")
	fs.Var(&o.faults.PublishErrorCode, "publish-error-code", "gRPC code of injected Publish failures")
	fs.Float64Var(&o.faults.AckErrorRate, "ack-error-rate", o.faults.AckErrorRate, "fraction of Acknowledge RPCs that fail")
	fs.Var(&o.faults.AckErrorCode, "ack-error-code", "gRPC code of injected Acknowledge failures")
	fs.Float64Var(&o.faults.AckRejectRate, "ack-reject-rate", o.faults.AckRejectRate, "fraction of ack ids refused as exactly-once delivery refuses expired ones")
	fs.Var(&o.faults.Latency, "latency", "latency added to each unary RPC and stream open")
	fs.Var(&o.faults.StreamCloseEvery, "stream-close-every", "close each StreamingPull with UNAVAILABLE after this long (0: never)")
}

func (o *options) validate() error {
	for _, a := range []string{o.addr, o.httpAddr} {
		if a == "" {
			continue
		}
		if err := loopback(a); err != nil {
			return err
		}
	}
	switch {
	case o.payloadBytes < 0 || o.attributes < 0 || o.orderingKeys < 0:
		return fmt.Errorf("--payload-bytes, --attributes and --ordering-keys must be >= 0")
	case o.batch < 1 || o.maxResponseBytes < 1:
		return fmt.Errorf("--batch and --max-response-bytes must be >= 1")
	case o.rate < 0:
		return fmt.Errorf("--rate must be >= 0 (0: line rate)")
	case o.rate > 0 && o.backlogAtStart:
		return fmt.Errorf("--rate and --backlog-at-start exclude each other")
	case o.heartbeat <= 0 || o.expiryScan <= 0:
		return fmt.Errorf("--heartbeat and --expiry-scan must be > 0")
	}
	return o.faults.validate()
}

// loopback rejects addresses other machines could reach.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("address %q: only loopback addresses are allowed (e.g. 127.0.0.1:0)", addr)
	}
	return nil
}
