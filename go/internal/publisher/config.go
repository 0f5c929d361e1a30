package publisher

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/encode"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/grpc/codes"
)

// Service limits (https://cloud.google.com/pubsub/quotas).
const (
	maxServiceBatchMessages = 1000
	maxMessageSize          = 10_000_000 // data + attributes + ordering key
	maxRequestBytesAllowed  = 9_500_000  // headroom under the 10 MB request limit
	maxAttributes           = 100
	MaxAttributeKeyBytes    = 256 // exported: the Spark sink checks idAttribute against it
	maxAttributeValueBytes  = 1024
	maxOrderingKeyBytes     = 1024
)

// Limits are the defaults and ranges of Config's numeric fields, by JSON
// key: the one place they are written. Validate applies them;
// cmd/contract hands them to Python (the Spark sink options). The
// batch bounds are the service limits above.
var Limits = map[string]clientopt.Limit{
	"max_batch_messages":      {Default: 1000, Min: 1, Max: maxServiceBatchMessages},
	"max_batch_bytes":         {Default: 4 << 20, Min: 1, Max: maxRequestBytesAllowed},
	"linger_ms":               {Default: 5, Min: 1, Max: 3_600_000},
	"max_in_flight_bytes":     {Default: 128 << 20, Min: 1, Max: 0},
	"max_concurrent_requests": {Default: 8, Min: 1, Max: 0},
	"retry_initial_ms":        {Default: 100, Min: 1, Max: 0},
	"retry_max_ms":            {Default: 60_000, Min: 1, Max: 0},
	"retry_timeout_ms":        {Default: 300_000, Min: 1, Max: 0},
	"open_timeout_ms":         {Default: 30_000, Min: 1, Max: 0},
	// The Go client's default (pubsub.DefaultPublishSettings): below it
	// gzip costs more CPU than it saves bytes.
	"compression_bytes_threshold": {Default: 240, Min: 1, Max: 0},
}

// Compressions are the values of Config.Compression: none, or gRPC's gzip
// (the one compressor the service and its emulator accept).
var Compressions = []string{"none", "gzip"}

var topicPattern = regexp.MustCompile(`^projects/[^/]+/topics/[^/]+$`)

// Config configures a Publisher. Zero numeric fields take their defaults
// (Limits).
type Config struct {
	clientopt.Options
	// Topic is the full topic name: projects/P/topics/T.
	Topic string `json:"topic"`
	// MaxBatchMessages bounds the messages of one Publish request.
	MaxBatchMessages int `json:"max_batch_messages"`
	// MaxBatchBytes bounds the encoded size of one Publish request. A
	// single message larger than this is sent alone.
	MaxBatchBytes int `json:"max_batch_bytes"`
	// LingerMs is how long a partial batch waits for more messages.
	LingerMs int `json:"linger_ms"`
	// MaxInFlightBytes bounds the encoded bytes accepted but not yet
	// acknowledged; Publish blocks past it.
	MaxInFlightBytes int64 `json:"max_in_flight_bytes"`
	// MaxConcurrentRequests bounds the Publish RPCs in flight.
	MaxConcurrentRequests int `json:"max_concurrent_requests"`
	// EnableMessageOrdering allows the ordering_key column.
	EnableMessageOrdering bool `json:"enable_message_ordering"`
	// RetryInitialMs is the first backoff of a transient failure.
	RetryInitialMs int `json:"retry_initial_ms"`
	// RetryMaxMs caps the backoff.
	RetryMaxMs int `json:"retry_max_ms"`
	// RetryTimeoutMs bounds all attempts of one request.
	RetryTimeoutMs int `json:"retry_timeout_ms"`
	// IDAttribute, if set, names an attribute stamped on every message
	// with IDPrefix + "-" + the row number counted across all Publish
	// calls of the Publisher from 0, so that a replayed write yields the
	// same ids (consumers can deduplicate on it). It overrides a
	// same-named attribute of the row.
	IDAttribute string `json:"id_attribute"`
	IDPrefix    string `json:"id_prefix"`
	// OpenTimeoutMs bounds the retries of the topic check in Open.
	OpenTimeoutMs int `json:"open_timeout_ms"`
	// TimestampAttribute, if set, names an attribute stamped on every
	// message with the row's TimestampColumn (a timestamp column) as epoch
	// milliseconds in decimal, the form Beam's PubsubIO writes and reads
	// with withTimestampAttribute. It overrides a same-named attribute of
	// the row.
	TimestampAttribute string `json:"timestamp_attribute"`
	TimestampColumn    string `json:"timestamp_column"`
	// Compression is "gzip" to compress Publish requests of at least
	// CompressionBytesThreshold encoded bytes, as the Go client's
	// EnableCompression does; "" or "none" sends them as they are.
	Compression               string `json:"compression"`
	CompressionBytesThreshold int    `json:"compression_bytes_threshold"`
	// EncodeSchema, if set, is the topic's schema (the sink's
	// schemaFrom=topic): every column but attributes, ordering_key and
	// timestamp_column is a field of the record each row is encoded to,
	// as the payload (go/internal/encode).
	EncodeSchema *encode.SinkSchema `json:"encode_schema"`
}

// Validate fills defaults and checks every field without touching the
// network. Errors have code INVALID_ARGUMENT and name the JSON key.
func (c *Config) Validate() error {
	if err := c.Options.Validate(); err != nil {
		return rpc.Errorf(codes.InvalidArgument, "%v", err)
	}
	if c.Topic == "" {
		return invalid("topic is required (projects/P/topics/T)")
	}
	if !topicPattern.MatchString(c.Topic) {
		return invalid("topic %q must be a full name: projects/P/topics/T", c.Topic)
	}
	for _, err := range []error{
		clientopt.ApplyLimit(Limits, "max_batch_messages", &c.MaxBatchMessages),
		clientopt.ApplyLimit(Limits, "max_batch_bytes", &c.MaxBatchBytes),
		clientopt.ApplyLimit(Limits, "linger_ms", &c.LingerMs),
		clientopt.ApplyLimit(Limits, "max_in_flight_bytes", &c.MaxInFlightBytes),
		clientopt.ApplyLimit(Limits, "max_concurrent_requests", &c.MaxConcurrentRequests),
		clientopt.ApplyLimit(Limits, "retry_initial_ms", &c.RetryInitialMs),
		clientopt.ApplyLimit(Limits, "retry_max_ms", &c.RetryMaxMs),
		clientopt.ApplyLimit(Limits, "retry_timeout_ms", &c.RetryTimeoutMs),
		clientopt.ApplyLimit(Limits, "open_timeout_ms", &c.OpenTimeoutMs),
		clientopt.ApplyLimit(Limits, "compression_bytes_threshold", &c.CompressionBytesThreshold),
	} {
		if err != nil {
			return invalid("%v", err)
		}
	}
	if c.RetryMaxMs < c.RetryInitialMs {
		return invalid("retry_max_ms %d must be >= retry_initial_ms %d", c.RetryMaxMs, c.RetryInitialMs)
	}
	if c.IDAttribute != "" {
		if err := checkAttributeKey(c.IDAttribute); err != nil {
			return invalid("id_attribute: %v", err)
		}
	} else if c.IDPrefix != "" {
		return invalid("id_prefix is set but id_attribute is not: set id_attribute to stamp ids")
	}
	if (c.TimestampAttribute == "") != (c.TimestampColumn == "") {
		return invalid("timestamp_attribute and timestamp_column go together: set both (the attribute to stamp and the timestamp column it takes) or neither")
	}
	if c.TimestampAttribute != "" {
		if err := checkAttributeKey(c.TimestampAttribute); err != nil {
			return invalid("timestamp_attribute: %v", err)
		}
		if c.TimestampAttribute == c.IDAttribute {
			return invalid("timestamp_attribute and id_attribute are both %q: pick two names", c.TimestampAttribute)
		}
		if knownColumn(c.TimestampColumn) {
			return invalid("timestamp_column %q is a message column; name a timestamp column of its own", c.TimestampColumn)
		}
	}
	if c.EncodeSchema != nil {
		if _, err := encode.New(*c.EncodeSchema); err != nil {
			return invalid("encode_schema: %v", err)
		}
	}
	if c.Compression == "" {
		c.Compression = "none"
	}
	if !slices.Contains(Compressions, c.Compression) {
		return invalid("compression %q: accepted values are %s", c.Compression, strings.Join(Compressions, ", "))
	}
	return nil
}

func (c *Config) linger() time.Duration { return ms(c.LingerMs) }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func invalid(format string, args ...any) error {
	return rpc.Errorf(codes.InvalidArgument, format, args...)
}

// checkAttributeKey applies the service's rules for attribute keys.
func checkAttributeKey(k string) error {
	switch {
	case len(k) > MaxAttributeKeyBytes:
		return fmt.Errorf("attribute key %.32q... is %d bytes, over the %d-byte limit", k, len(k), MaxAttributeKeyBytes)
	case strings.HasPrefix(k, "goog"):
		return fmt.Errorf("attribute key %q: keys starting with \"goog\" are reserved", k)
	}
	return nil
}
