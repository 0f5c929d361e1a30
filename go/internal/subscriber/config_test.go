package subscriber

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

func TestValidateFillsDefaults(t *testing.T) {
	c := Config{Options: clientopt.Options{EmulatorHost: "127.0.0.1:8085"}, Subscription: testSub}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := Config{
		Options:                c.Options,
		Subscription:           testSub,
		Streams:                1,
		CatchUpStreams:         1,
		CatchUpLagMs:           1000,
		MaxOutstandingMessages: 1000,
		MaxOutstandingBytes:    100 << 20,
		BatchSize:              1000,
		MaxWaitMs:              100,
		AckDeadlineSeconds:     60,
		MaxExtensionSeconds:    3600,
		OpenTimeoutMs:          30000,
	}
	if c != want {
		t.Errorf("Validate filled\n %+v\nwant\n %+v", c, want)
	}
	// Explicit values are kept.
	c = Config{Options: clientopt.Options{EmulatorHost: "127.0.0.1:8085"}, Subscription: testSub, Streams: 4, AckDeadlineSeconds: 600}
	if err := c.Validate(); err != nil || c.Streams != 4 || c.AckDeadlineSeconds != 600 {
		t.Errorf("Validate = %v, streams=%d ack_deadline_seconds=%d", err, c.Streams, c.AckDeadlineSeconds)
	}
}

func TestValidateErrorsNameTheKey(t *testing.T) {
	base := func() Config {
		return Config{Options: clientopt.Options{EmulatorHost: "127.0.0.1:8085"}, Subscription: testSub}
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"missing subscription", func(c *Config) { c.Subscription = "" }, []string{"subscription", "projects/"}},
		{"short subscription", func(c *Config) { c.Subscription = "my-sub" }, []string{"subscription", "my-sub", "projects/<project>/subscriptions/<name>"}},
		{"topic instead", func(c *Config) { c.Subscription = "projects/p/topics/t" }, []string{"subscription"}},
		{"negative streams", func(c *Config) { c.Streams = -1 }, []string{"streams", "-1", "between 1 and 64"}},
		{"too many streams", func(c *Config) { c.Streams = 65 }, []string{"streams", "65"}},
		{"negative max messages", func(c *Config) { c.MaxOutstandingMessages = -5 }, []string{"max_outstanding_messages"}},
		{"negative max bytes", func(c *Config) { c.MaxOutstandingBytes = -1 }, []string{"max_outstanding_bytes"}},
		{"negative batch", func(c *Config) { c.BatchSize = -1 }, []string{"batch_size"}},
		{"negative wait", func(c *Config) { c.MaxWaitMs = -1 }, []string{"max_wait_ms"}},
		{"short deadline", func(c *Config) { c.AckDeadlineSeconds = 5 }, []string{"ack_deadline_seconds", "between 10 and 600"}},
		{"long deadline", func(c *Config) { c.AckDeadlineSeconds = 601 }, []string{"ack_deadline_seconds"}},
		{"negative extension", func(c *Config) { c.MaxExtensionSeconds = -1 }, []string{"max_extension_seconds"}},
		{"negative open timeout", func(c *Config) { c.OpenTimeoutMs = -1 }, []string{"open_timeout_ms"}},
		{"emulator and endpoint", func(c *Config) { c.Endpoint = "pubsub.googleapis.com:443" }, []string{"emulator_host", "endpoint"}},
		{"emulator without port", func(c *Config) { c.EmulatorHost = "localhost" }, []string{"emulator_host"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mutate(&c)
			err := c.Validate()
			if rpc.Code(err) != codes.InvalidArgument {
				t.Fatalf("Validate = %v (code %v), want INVALID_ARGUMENT", err, rpc.Code(err))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestSettingsFollowConfig(t *testing.T) {
	c := Config{AckDeadlineSeconds: 10, MaxExtensionSeconds: 100, OpenTimeoutMs: 1500}
	s := newSettings(&c)
	if s.ackDeadline.Seconds() != 10 || s.maxExtension.Seconds() != 100 || s.openTimeout.Milliseconds() != 1500 {
		t.Errorf("settings %+v do not follow the config", s)
	}
	// Leases are checked often enough to extend in the second half of the
	// deadline with margin.
	if s.leaseTick <= 0 || s.leaseTick > s.ackDeadline/4 {
		t.Errorf("lease tick %v for a %v deadline", s.leaseTick, s.ackDeadline)
	}
	// A long ack deadline leaves the prefetch lease (and the stream's
	// deadline) at Pub/Sub's 10 s minimum, and the tick follows the shorter.
	c = Config{AckDeadlineSeconds: 120, MaxExtensionSeconds: 3600, OpenTimeoutMs: 1}
	s = newSettings(&c)
	if s.ackDeadline != 120*time.Second || s.prefetchLease != 10*time.Second || s.leaseTick > s.prefetchLease/4 {
		t.Errorf("ack deadline 120 s: ackDeadline %v prefetchLease %v tick %v, want 2m0s 10s <=2.5s",
			s.ackDeadline, s.prefetchLease, s.leaseTick)
	}
}

func TestConfigJSONKeys(t *testing.T) {
	in := `{"emulator_host": "127.0.0.1:8085", "endpoint": "", "credentials_file": "",
		"subscription": "projects/p/subscriptions/s", "streams": 2,
		"max_outstanding_messages": 10, "max_outstanding_bytes": 2048,
		"batch_size": 5, "max_wait_ms": 7, "ack_deadline_seconds": 20,
		"max_extension_seconds": 30, "open_timeout_ms": 40, "no_pull": true}`
	dec := json.NewDecoder(strings.NewReader(in))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	want := Config{
		Options:      clientopt.Options{EmulatorHost: "127.0.0.1:8085"},
		Subscription: "projects/p/subscriptions/s", Streams: 2,
		MaxOutstandingMessages: 10, MaxOutstandingBytes: 2048,
		BatchSize: 5, MaxWaitMs: 7, AckDeadlineSeconds: 20,
		MaxExtensionSeconds: 30, OpenTimeoutMs: 40, NoPull: true,
	}
	if c != want {
		t.Errorf("decoded %+v, want %+v", c, want)
	}
}
