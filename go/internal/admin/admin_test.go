package admin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/emulator"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

func TestCreateGetDeleteAgainstEmbeddedEmulator(t *testing.T) {
	e, err := emulator.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	ctx := context.Background()
	o := clientopt.Options{EmulatorHost: e.Addr()}
	do := func(r Request) (map[string]any, error) {
		r.Options = o
		raw, err := Do(ctx, r)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(raw, &m)
	}
	if _, err := do(Request{Op: "create_topic", Topic: "projects/p/topics/t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := do(Request{Op: "create_subscription", Topic: "projects/p/topics/t", Subscription: "projects/p/subscriptions/s", AckDeadlineSeconds: 42}); err != nil {
		t.Fatal(err)
	}
	got, err := do(Request{Op: "get_subscription", Subscription: "projects/p/subscriptions/s"})
	if err != nil {
		t.Fatal(err)
	}
	if got["ack_deadline_seconds"].(float64) != 42 || got["topic"] != "projects/p/topics/t" {
		t.Fatalf("get_subscription = %v", got)
	}
	if _, err := do(Request{Op: "delete_subscription", Subscription: "projects/p/subscriptions/s"}); err != nil {
		t.Fatal(err)
	}
	_, err = do(Request{Op: "get_subscription", Subscription: "projects/p/subscriptions/s"})
	if rpc.Code(err) != codes.NotFound {
		t.Fatalf("after delete: err = %v, want NOT_FOUND", err)
	}
}

func TestParseRejectsUnknownKeysAndOps(t *testing.T) {
	if _, err := Parse([]byte(`{"op":"create_topic","topik":"x"}`)); err == nil || !strings.Contains(err.Error(), "topik") {
		t.Fatalf("unknown key: err = %v", err)
	}
	r, err := Parse([]byte(`{"op":"explode"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Do(context.Background(), r); rpc.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "create_topic") {
		t.Fatalf("unknown op: err = %v", err)
	}
}

func TestSubscriptionSettingsAndSeek(t *testing.T) {
	e, err := emulator.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	ctx := context.Background()
	do := func(r Request) (map[string]any, error) {
		r.Options = clientopt.Options{EmulatorHost: e.Addr()}
		raw, err := Do(ctx, r)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(raw, &m)
	}
	if _, err := do(Request{Op: "create_topic", Topic: "projects/p/topics/t"}); err != nil {
		t.Fatal(err)
	}
	_, err = do(Request{Op: "create_subscription", Topic: "projects/p/topics/t", Subscription: "projects/p/subscriptions/s",
		Filter: `attributes.k = "v"`, EnableExactlyOnceDelivery: true, MessageRetentionSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	got, err := do(Request{Op: "get_subscription", Subscription: "projects/p/subscriptions/s"})
	if err != nil {
		t.Fatal(err)
	}
	if got["filter"] != `attributes.k = "v"` || got["enable_exactly_once_delivery"] != true || got["message_retention_seconds"].(float64) != 3600 {
		t.Fatalf("get_subscription = %v", got)
	}
	if _, err := do(Request{Op: "seek", Subscription: "projects/p/subscriptions/s", TimeUnixMicros: 1}); err != nil {
		t.Fatalf("seek to a time: %v", err)
	}
	// pstest has no snapshots; seeking to one is tested on the official emulator (tests/test_lifecycle.py).
	_, err = do(Request{Op: "seek", Subscription: "projects/p/subscriptions/s", TimeUnixMicros: 1, Snapshot: "projects/p/snapshots/n"})
	if rpc.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "exactly one") {
		t.Fatalf("seek with both targets: %v", err)
	}
}

func TestMissingResourceKeyIsInvalidArgumentNamingIt(t *testing.T) {
	emu, err := emulator.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Stop()
	conn := clientopt.Options{EmulatorHost: emu.Addr()}
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Op: "create_topic"}, `"topic": projects/P/topics/T`},
		{Request{Op: "get_subscription"}, `"subscription": projects/P/subscriptions/S`},
		{Request{Op: "create_subscription", Subscription: "projects/p/subscriptions/s"}, `"topic"`},
		{Request{Op: "seek", TimeUnixMicros: 1}, `"subscription"`},
		{Request{Op: "create_snapshot", Subscription: "projects/p/subscriptions/s"}, `"snapshot": projects/P/snapshots/N`},
		{Request{Op: "create_snapshot", Snapshot: "projects/p/snapshots/n"}, `"subscription"`},
		{Request{Op: "delete_snapshot"}, `"snapshot"`},
	} {
		c.req.Options = conn
		_, err := Do(context.Background(), c.req)
		if rpc.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.req.Op+" needs "+c.want) {
			t.Errorf("%s: err = %v, want INVALID_ARGUMENT naming %s", c.req.Op, err, c.want)
		}
	}
}
