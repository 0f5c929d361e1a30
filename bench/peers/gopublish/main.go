// Command gopublish measures Google's Go publisher (cloud.google.com/go/pubsub/v2
// Publisher, default batching): it publishes N messages of S bytes, waits
// for every result and prints one JSON line. It honours PUBSUB_EMULATOR_HOST.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2"
)

type result struct {
	Peer       string  `json:"peer"`
	Messages   int64   `json:"messages"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Errors     int64   `json:"errors"`
}

func main() {
	topic := flag.String("topic", "", "projects/P/topics/T")
	n := flag.Int("messages", 100000, "messages to publish")
	size := flag.Int("size", 1024, "data bytes per message")
	maxOutstanding := flag.Int("max-outstanding", 10000, "publisher flow control: most unacknowledged messages (blocks beyond)")
	flag.Parse()
	if err := run(*topic, *n, *size, *maxOutstanding); err != nil {
		fmt.Fprintln(os.Stderr, "gopublish:", err)
		os.Exit(1)
	}
}

func run(topic string, n, size, maxOutstanding int) error {
	project, ok := projectOf(topic, "topics")
	if !ok {
		return fmt.Errorf("--topic %q: want projects/P/topics/T", topic)
	}
	ctx := context.Background()
	client, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return err
	}
	defer client.Close()
	pub := client.Publisher(topic)
	// Batching stays at its defaults; flow control blocks instead of the
	// default "ignore" so N can exceed memory-friendly sizes.
	pub.PublishSettings.FlowControlSettings = pubsub.FlowControlSettings{
		MaxOutstandingMessages: maxOutstanding,
		MaxOutstandingBytes:    -1,
		LimitExceededBehavior:  pubsub.FlowControlBlock,
	}
	defer pub.Stop()

	data := make([]byte, size)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	results := make([]*pubsub.PublishResult, n)
	cpu0, t0 := cpuSeconds(), time.Now()
	for i := range results {
		results[i] = pub.Publish(ctx, &pubsub.Message{Data: data})
	}
	var errs int64
	var firstErr error
	for _, r := range results {
		if _, err := r.Get(ctx); err != nil {
			errs++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	secs, cpu := time.Since(t0).Seconds(), cpuSeconds()-cpu0
	ok64 := int64(n) - errs
	if err := json.NewEncoder(os.Stdout).Encode(result{
		Peer:       "go-publish",
		Messages:   ok64,
		Bytes:      ok64 * int64(size),
		Seconds:    secs,
		MsgsPerSec: float64(ok64) / secs,
		CPUSeconds: cpu,
		Errors:     errs,
	}); err != nil {
		return err
	}
	if firstErr != nil {
		return fmt.Errorf("%d of %d publishes failed; first: %w", errs, n, firstErr)
	}
	return nil
}

// projectOf extracts P from "projects/P/<kind>/N".
func projectOf(name, kind string) (string, bool) {
	p := strings.Split(name, "/")
	if len(p) != 4 || p[0] != "projects" || p[1] == "" || p[2] != kind || p[3] == "" {
		return "", false
	}
	return p[1], true
}

// cpuSeconds is the user+system CPU this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
