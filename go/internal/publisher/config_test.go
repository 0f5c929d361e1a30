package publisher

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/grpc/codes"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{Topic: testTopic, Options: clientopt.Options{EmulatorHost: "127.0.0.1:1"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := Config{
		Options:                   c.Options,
		Topic:                     testTopic,
		MaxBatchMessages:          1000,
		MaxBatchBytes:             4 << 20,
		LingerMs:                  5,
		MaxInFlightBytes:          128 << 20,
		MaxConcurrentRequests:     8,
		RetryInitialMs:            100,
		RetryMaxMs:                60_000,
		RetryTimeoutMs:            300_000,
		OpenTimeoutMs:             30_000,
		Compression:               "none",
		CompressionBytesThreshold: 240,
	}
	if c != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
}

func TestConfigJSONKeys(t *testing.T) {
	var c Config
	in := `{"emulator_host":"127.0.0.1:8085","topic":"projects/p/topics/t","max_batch_messages":10,
		"max_batch_bytes":1000,"linger_ms":7,"max_in_flight_bytes":5000,"max_concurrent_requests":2,
		"enable_message_ordering":true,"retry_initial_ms":1,"retry_max_ms":2,"retry_timeout_ms":3,
		"id_attribute":"rid","id_prefix":"job","open_timeout_ms":4}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	want := Config{
		Options: clientopt.Options{EmulatorHost: "127.0.0.1:8085"}, Topic: testTopic,
		MaxBatchMessages: 10, MaxBatchBytes: 1000, LingerMs: 7, MaxInFlightBytes: 5000,
		MaxConcurrentRequests: 2, EnableMessageOrdering: true, RetryInitialMs: 1, RetryMaxMs: 2,
		RetryTimeoutMs: 3, IDAttribute: "rid", IDPrefix: "job", OpenTimeoutMs: 4,
	}
	if c != want {
		t.Errorf("decoded:\n got %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestConfigRejects(t *testing.T) {
	base := func() Config {
		return Config{Topic: testTopic, Options: clientopt.Options{EmulatorHost: "127.0.0.1:1"}}
	}
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no topic", func(c *Config) { c.Topic = "" }, "topic is required"},
		{"short topic", func(c *Config) { c.Topic = "t" }, "projects/P/topics/T"},
		{"subscription name", func(c *Config) { c.Topic = "projects/p/subscriptions/s" }, "projects/P/topics/T"},
		{"too many messages", func(c *Config) { c.MaxBatchMessages = 1001 }, "max_batch_messages = 1001 is out of range: must be between 1 and 1000"},
		{"negative messages", func(c *Config) { c.MaxBatchMessages = -1 }, "max_batch_messages = -1 is out of range"},
		{"request too big", func(c *Config) { c.MaxBatchBytes = 9_500_001 }, "max_batch_bytes = 9500001 is out of range: must be between 1 and 9500000"},
		{"negative linger", func(c *Config) { c.LingerMs = -1 }, "linger_ms"},
		{"negative in flight", func(c *Config) { c.MaxInFlightBytes = -1 }, "max_in_flight_bytes"},
		{"negative concurrency", func(c *Config) { c.MaxConcurrentRequests = -1 }, "max_concurrent_requests"},
		{"max below initial", func(c *Config) { c.RetryInitialMs, c.RetryMaxMs = 500, 100 }, "retry_max_ms"},
		{"negative retry timeout", func(c *Config) { c.RetryTimeoutMs = -1 }, "retry_timeout_ms"},
		{"negative open timeout", func(c *Config) { c.OpenTimeoutMs = -1 }, "open_timeout_ms"},
		{"reserved id attribute", func(c *Config) { c.IDAttribute = "googid" }, "reserved"},
		{"prefix without attribute", func(c *Config) { c.IDPrefix = "x" }, "id_attribute"},
		{"emulator and endpoint", func(c *Config) { c.Endpoint = "pubsub.googleapis.com:443" }, "exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.modify(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
			if rpc.Code(err) != codes.InvalidArgument {
				t.Errorf("code %v, want InvalidArgument", rpc.Code(err))
			}
		})
	}
}

func TestConfigLargestBatchAccepted(t *testing.T) {
	c := Config{Topic: testTopic, Options: clientopt.Options{EmulatorHost: "127.0.0.1:1"}, MaxBatchMessages: 1000, MaxBatchBytes: 9_500_000}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
