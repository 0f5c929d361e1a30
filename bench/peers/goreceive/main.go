// Command goreceive measures Google's Go client (cloud.google.com/go/pubsub/v2
// Subscriber.Receive) consuming a subscription: it acks every message and,
// after a warm-up, counts messages, bytes and process CPU over a fixed
// window, then prints one JSON line. It honours PUBSUB_EMULATOR_HOST.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
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
}

func main() {
	subName := flag.String("subscription", "", "projects/P/subscriptions/S")
	duration := flag.Duration("duration", 20*time.Second, "measurement window")
	warmup := flag.Duration("warmup", 3*time.Second, "time before the window starts")
	maxOutstanding := flag.Int("max-outstanding", 100000, "ReceiveSettings.MaxOutstandingMessages")
	streams := flag.Int("streams", 1, "ReceiveSettings.NumGoroutines (StreamingPull streams)")
	flag.Parse()
	if err := run(*subName, *duration, *warmup, *maxOutstanding, *streams); err != nil {
		fmt.Fprintln(os.Stderr, "goreceive:", err)
		os.Exit(1)
	}
}

func run(subName string, duration, warmup time.Duration, maxOutstanding, streams int) error {
	project, ok := projectOf(subName, "subscriptions")
	if !ok {
		return fmt.Errorf("--subscription %q: want projects/P/subscriptions/S", subName)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return err
	}
	defer client.Close()
	sub := client.Subscriber(subName)
	sub.ReceiveSettings.MaxOutstandingMessages = maxOutstanding
	sub.ReceiveSettings.NumGoroutines = streams

	var msgs, bytes atomic.Int64
	errc := make(chan error, 1)
	go func() {
		errc <- sub.Receive(ctx, func(_ context.Context, m *pubsub.Message) {
			msgs.Add(1)
			bytes.Add(int64(len(m.Data)))
			m.Ack()
		})
	}()

	// Sample counters at the window's edges; Receive keeps running between.
	type sample struct {
		msgs, bytes int64
		cpu         float64
		at          time.Time
	}
	take := func() sample {
		return sample{msgs.Load(), bytes.Load(), cpuSeconds(), time.Now()}
	}
	if err := waitOrFail(warmup, errc); err != nil {
		return err
	}
	a := take()
	if err := waitOrFail(duration, errc); err != nil {
		return err
	}
	b := take()
	cancel()
	if err := <-errc; err != nil && ctx.Err() == nil {
		return err
	}

	secs := b.at.Sub(a.at).Seconds()
	r := result{
		Peer:       "go-receive",
		Messages:   b.msgs - a.msgs,
		Bytes:      b.bytes - a.bytes,
		Seconds:    secs,
		MsgsPerSec: float64(b.msgs-a.msgs) / secs,
		CPUSeconds: b.cpu - a.cpu,
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// waitOrFail waits d unless Receive ends first.
func waitOrFail(d time.Duration, errc <-chan error) error {
	select {
	case <-time.After(d):
		return nil
	case err := <-errc:
		return fmt.Errorf("Receive ended early: %v", err)
	}
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
