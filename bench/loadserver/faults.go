package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Faults is the run-time tunable misbehaviour of the server. It is set from
// flags and replaced wholesale by POST /config.
type Faults struct {
	// PublishErrorRate is the fraction of Publish RPCs that fail with
	// PublishErrorCode (nothing is counted as published for them).
	PublishErrorRate float64 `json:"publish_error_rate"`
	PublishErrorCode Code    `json:"publish_error_code"`
	// AckErrorRate is the fraction of unary Acknowledge RPCs that fail with
	// AckErrorCode; their acks are not applied.
	AckErrorRate float64 `json:"ack_error_rate"`
	AckErrorCode Code    `json:"ack_error_code"`
	// AckRejectRate is the fraction of ack ids in each Acknowledge that are
	// refused as a subscription with exactly-once delivery refuses an
	// expired ack id: INVALID_ARGUMENT with ErrorInfo metadata mapping each
	// refused id to PERMANENT_FAILURE_INVALID_ACK_ID. Refused ids are not
	// settled; the others are.
	AckRejectRate float64 `json:"ack_reject_rate"`
	// Latency is added to every unary RPC and to opening a StreamingPull.
	Latency Duration `json:"latency"`
	// StreamCloseEvery closes each StreamingPull stream with UNAVAILABLE
	// this long after it opened; 0 never.
	StreamCloseEvery Duration `json:"stream_close_every"`
}

func defaultFaults() Faults {
	return Faults{PublishErrorCode: Code(codes.Unavailable), AckErrorCode: Code(codes.Unavailable)}
}

func (f Faults) validate() error {
	for _, r := range []float64{f.PublishErrorRate, f.AckErrorRate, f.AckRejectRate} {
		if r < 0 || r > 1 {
			return fmt.Errorf("error rate %v outside [0, 1]", r)
		}
	}
	if f.Latency < 0 || f.StreamCloseEvery < 0 {
		return fmt.Errorf("negative duration")
	}
	if codes.Code(f.PublishErrorCode) == codes.OK || codes.Code(f.AckErrorCode) == codes.OK {
		return fmt.Errorf("error code OK is not an error")
	}
	return nil
}

// publishErr decides whether this Publish fails.
func (f *Faults) publishErr() error {
	return roll(f.PublishErrorRate, f.PublishErrorCode, "publish")
}

// ackErr decides whether this Acknowledge fails.
func (f *Faults) ackErr() error {
	return roll(f.AckErrorRate, f.AckErrorCode, "acknowledge")
}

// ackRejects picks the ack ids this Acknowledge refuses (nil: none).
func (f *Faults) ackRejects(ids []string) map[string]string {
	if f.AckRejectRate <= 0 {
		return nil
	}
	var out map[string]string
	for _, id := range ids {
		if rand.Float64() < f.AckRejectRate {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = "PERMANENT_FAILURE_INVALID_ACK_ID"
		}
	}
	return out
}

// rejectErr is the exactly-once delivery answer naming refused ack ids.
func rejectErr(refused map[string]string) error {
	st, err := status.New(codes.InvalidArgument, "Some acknowledgement ids in the request were invalid. This could be "+
		"because the acknowledgement ids have expired or the acknowledgement ids were malformed.").WithDetails(
		&errdetails.ErrorInfo{Reason: "EXACTLY_ONCE_ACKID_FAILURE", Domain: "pubsub.googleapis.com", Metadata: refused})
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return st.Err()
}

func roll(rate float64, c Code, what string) error {
	if rate <= 0 || rand.Float64() >= rate {
		return nil
	}
	return status.Errorf(codes.Code(c), "loadserver: injected %s failure", what)
}

// delay waits the configured latency or until ctx ends.
func (f *Faults) delay(ctx context.Context) error {
	if f.Latency <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(f.Latency))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// Code is a gRPC code written by its canonical name, e.g. "UNAVAILABLE".
type Code codes.Code

var codeNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// Set parses a code name (any case) or number; it makes Code a flag.Value.
func (c *Code) Set(s string) error {
	for i, n := range codeNames {
		if strings.EqualFold(s, n) {
			*c = Code(i)
			return nil
		}
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n >= uint64(len(codeNames)) {
		return fmt.Errorf("unknown gRPC code %q (want e.g. UNAVAILABLE)", s)
	}
	*c = Code(n)
	return nil
}

func (c Code) MarshalText() ([]byte, error)  { return []byte(c.String()), nil }
func (c *Code) UnmarshalText(b []byte) error { return c.Set(string(b)) }

// Duration is a time.Duration written as a Go duration string ("250ms").
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalText() ([]byte, error)  { return []byte(d.String()), nil }
func (d *Duration) UnmarshalText(b []byte) error { return d.Set(string(b)) }
