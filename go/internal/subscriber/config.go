package subscriber

import (
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// Config is the user configuration of a subscriber (JSON from the C API).
// The defaults and ranges of its numeric fields are in Limits.
type Config struct {
	clientopt.Options
	// Subscription is required: projects/P/subscriptions/S.
	Subscription string `json:"subscription"`
	// Streams is the number of StreamingPull streams.
	Streams int `json:"streams"`
	// CatchUpStreams is how many streams the subscriber grows to while it
	// is catching up: while what arrives was published more than
	// CatchUpLagMs ago (catchup.go). At most Streams: it never grows.
	CatchUpStreams int `json:"catch_up_streams"`
	// CatchUpLagMs is how old the newest message of a response must be for
	// the subscriber to count as catching up.
	CatchUpLagMs int `json:"catch_up_lag_ms"`
	// MaxOutstandingMessages bounds messages held (buffered or handed out
	// and not yet acked, nacked or released); the server-side flow control
	// is derived from it (serverLimits).
	MaxOutstandingMessages int `json:"max_outstanding_messages"`
	// MaxOutstandingBytes bounds what holding messages costs this process:
	// their bytes until they are handed out, messageOverhead each until
	// they are no longer held (flowController). Client-side only.
	MaxOutstandingBytes int64 `json:"max_outstanding_bytes"`
	// BatchSize is the number of rows per Next that asks for none.
	BatchSize int `json:"batch_size"`
	// MaxWaitMs is the wait of a Next that asks for none.
	MaxWaitMs int `json:"max_wait_ms"`
	// AckDeadlineSeconds is the deadline each lease extension of a
	// handed-out message sets. Messages received but not handed out
	// (prefetch) are leased for at most 10 s at a time (the stream
	// deadline), so they come back soon if the process dies.
	AckDeadlineSeconds int `json:"ack_deadline_seconds"`
	// MaxExtensionSeconds is how long a held message is kept leased at
	// most.
	MaxExtensionSeconds int `json:"max_extension_seconds"`
	// OpenTimeoutMs bounds retries in Open while the endpoint is
	// unreachable.
	OpenTimeoutMs int `json:"open_timeout_ms"`
	// NoPull opens no stream: the subscriber only acks, nacks and modacks
	// ack ids pulled elsewhere (the Spark driver acking on commit).
	NoPull bool `json:"no_pull"`
	// ArrivalCutoffUs, if set, is a publish time (microseconds since the
	// epoch; an AvailableNow query's start): messages published later are
	// released where they arrive, never handed out, and do not count as
	// arrivals in Stats.QuietMs (cutoff.go; Stats.Late counts them). 0: none.
	ArrivalCutoffUs int64 `json:"arrival_cutoff_us,omitempty"`
	// Decoder, if set, decodes payloads in Next (schema mode, decoding.go).
	// Ignored with NoPull.
	Decoder *decode.DecoderConfig `json:"decoder,omitempty"`
}

// Limits are the defaults and ranges of the numeric fields of Config (the
// decoder's: decode.Limits), by JSON key: the one place they are written. Validate
// applies them; cmd/contract hands them to Python (the Spark options).
var Limits = map[string]clientopt.Limit{
	"streams":                  {Default: 1, Min: 1, Max: 64},
	"catch_up_streams":         {Default: 1, Min: 1, Max: 64},
	"catch_up_lag_ms":          {Default: 1000, Min: 1, Max: 3_600_000},
	"max_outstanding_messages": {Default: 1000, Min: 1, Max: 10_000_000},
	"max_outstanding_bytes":    {Default: 100 << 20, Min: 1, Max: 1 << 40},
	"batch_size":               {Default: 1000, Min: 1, Max: 1_000_000},
	"max_wait_ms":              {Default: 100, Min: 1, Max: 3_600_000},
	"ack_deadline_seconds":     {Default: 60, Min: 10, Max: 600},
	"max_extension_seconds":    {Default: 3600, Min: 1, Max: 7 * 24 * 3600},
	"open_timeout_ms":          {Default: 30000, Min: 1, Max: 3_600_000},
}

// minStreamAckDeadline is the shortest stream ack deadline Pub/Sub
// accepts; prefetched messages are leased no longer than this.
const minStreamAckDeadline = 10 * time.Second

// Validate fills defaults (for zero values) and checks every field,
// without touching the network. Errors have code INVALID_ARGUMENT and name
// the JSON key.
func (c *Config) Validate() error {
	if err := c.Options.Validate(); err != nil {
		return rpc.Errorf(codes.InvalidArgument, "%v", err)
	}
	if c.Subscription == "" {
		return invalid(`subscription is required, e.g. "projects/my-project/subscriptions/my-sub"`)
	}
	if p := strings.Split(c.Subscription, "/"); len(p) != 4 || p[0] != "projects" || p[1] == "" || p[2] != "subscriptions" || p[3] == "" {
		return invalid("subscription %q must be a full name: projects/<project>/subscriptions/<name>", c.Subscription)
	}
	checks := []error{
		intField("streams", &c.Streams),
		intField("catch_up_streams", &c.CatchUpStreams),
		intField("catch_up_lag_ms", &c.CatchUpLagMs),
		intField("max_outstanding_messages", &c.MaxOutstandingMessages),
		intField("max_outstanding_bytes", &c.MaxOutstandingBytes),
		intField("batch_size", &c.BatchSize),
		intField("max_wait_ms", &c.MaxWaitMs),
		intField("ack_deadline_seconds", &c.AckDeadlineSeconds),
		intField("max_extension_seconds", &c.MaxExtensionSeconds),
		intField("open_timeout_ms", &c.OpenTimeoutMs),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if c.ArrivalCutoffUs < 0 {
		return invalid("arrival_cutoff_us must be a publish time in microseconds since the epoch (or 0 for none), got %d", c.ArrivalCutoffUs)
	}
	if c.Decoder != nil && !c.NoPull {
		return c.Decoder.Validate()
	}
	return nil
}

// intField applies the limit of key (Limits) to *v.
func intField[T int | int64](key string, v *T) error {
	if err := clientopt.ApplyLimit(Limits, key, v); err != nil {
		return invalid("%v", err)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return rpc.Errorf(codes.InvalidArgument, format, args...)
}

// settings are the timings derived from a validated Config. Tests shorten
// them below what Config allows to keep runs fast.
type settings struct {
	ackDeadline time.Duration // lease-extension deadline of handed-out messages
	// prefetchLease is the stream ack deadline and the lease-extension
	// deadline of messages received but not handed out: if the process
	// dies, its prefetch comes back this soon, whatever ackDeadline is.
	prefetchLease time.Duration
	maxExtension  time.Duration // stop extending a message held this long
	leaseTick     time.Duration // how often leases are checked
	openTimeout   time.Duration // bound on GetSubscription retries in Open
	openAttempt   time.Duration // per-attempt timeout of GetSubscription
	retry         rpc.Backoff   // stream reconnects and Open retries
	rpcAttempts   int           // attempts per ack/modack chunk on transient errors
	rpcTimeout    time.Duration // per-attempt timeout of ack/modack RPCs
	drainTimeout  time.Duration // bound on Close waiting for half-closed streams to end (see newSettings)
	closeTimeout  time.Duration // bound on the nacks sent by Close
	pingInterval  time.Duration // stream keepalive ping period
	pingTimeout   time.Duration // no response this long after a ping: reconnect
	seenCapacity  int           // message ids remembered for redelivery counting
}

func newSettings(c *Config) settings {
	d := time.Duration(c.AckDeadlineSeconds) * time.Second
	return settings{
		ackDeadline:   d,
		prefetchLease: min(d, minStreamAckDeadline),
		maxExtension:  time.Duration(c.MaxExtensionSeconds) * time.Second,
		// Ticks of a tenth of the shorter lease: extensions land with at
		// least 40% of it left.
		leaseTick:   min(max(min(d, minStreamAckDeadline)/10, 100*time.Millisecond), 5*time.Second),
		openTimeout: time.Duration(c.OpenTimeoutMs) * time.Millisecond,
		openAttempt: 10 * time.Second,
		retry:       rpc.Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second},
		// 8 attempts: the backoff's pauses (lower halves 50ms, 100ms, ...,
		// 3.2s) add up to at least 6.3s, so an outage of a few seconds (a
		// restarting proxy, refused connections) does not fail a call.
		rpcAttempts: 8,
		rpcTimeout:  30 * time.Second,
		// Past it a half-closed stream (or a lease extension in flight)
		// is cancelled: an HTTP/2 RST_STREAM, the cut Google's emulator
		// keeps leasing to. A server that is merely slow answers the
		// half-close in time, but on a loaded 2-core machine not always
		// within 2 s (the earlier bound, under which stopped queries cut
		// streams now and then). So this bounds only an unresponsive
		// server, as closeTimeout bounds Close's nacks to it.
		drainTimeout: 10 * time.Second,
		closeTimeout: 10 * time.Second,
		pingInterval: 30 * time.Second,
		pingTimeout:  15 * time.Second,
		seenCapacity: 1 << 16,
	}
}

// The pipe's timings (pipe.go) follow from the prefetch lease and the lease
// tick. With the 10 s prefetch lease and 1 s ticks: 2 s to drain the pipe
// (~18 MiB at 9 MB/s), messages at most 8 s old when read, so a stream
// pauses at most 6 s before it ends its session.

// pipeDrain bounds how long a stream that is not paused takes to read what
// is ahead of a response in its pipe.
func (s *settings) pipeDrain() time.Duration { return min(2*time.Second, s.prefetchLease/5) }

// maxPipeAge is the most a message may have been leased when it is read,
// leaving a lease tick and an RPC's time for its first extension.
func (s *settings) maxPipeAge() time.Duration {
	return s.prefetchLease - s.leaseTick - min(time.Second, s.prefetchLease/10)
}
