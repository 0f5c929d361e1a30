package subscriber

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/conn"
)

// newAcker returns an acker talking to pstest through f.
func newAcker(t *testing.T, f *faults) *acker {
	t.Helper()
	srv := newServer(t)
	opts := append(conn.Options{EmulatorHost: srv.Addr}.ClientOptions(), f.options()...)
	client, err := vkit.NewSubscriptionAdminClient(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return &acker{
		rpc:          client,
		subscription: testSub,
		attempts:     3,
		timeout:      5 * time.Second,
		retry:        backoff{initial: time.Millisecond, max: 10 * time.Millisecond, factor: 2},
	}
}

func manyIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%d:1", i)
	}
	return ids
}

func TestAckerChunks(t *testing.T) {
	var f faults
	a := newAcker(t, &f)
	n, err := a.ack(context.Background(), manyIDs(6000))
	if err != nil || n != 6000 {
		t.Fatalf("ack = %d, %v; want 6000, nil", n, err)
	}
	got := f.calls("Acknowledge")
	slices.Sort(got)
	if fmt.Sprint(got) != "[1000 2500 2500]" {
		t.Errorf("Acknowledge calls carried %v ids, want [1000 2500 2500]", got)
	}
	n, err = a.modack(context.Background(), manyIDs(2500), 0)
	if err != nil || n != 2500 {
		t.Fatalf("modack = %d, %v", n, err)
	}
	if got := f.calls("ModifyAckDeadline"); fmt.Sprint(got) != "[2500]" || f.modacks[0] != 0 {
		t.Errorf("ModifyAckDeadline calls %v deadlines %v, want one of 2500 ids with deadline 0", got, f.modacks)
	}
	if n, err := a.ack(context.Background(), nil); n != 0 || err != nil || len(f.calls("Acknowledge")) != 3 {
		t.Errorf("ack of no ids = %d, %v and sent a request", n, err)
	}
}

func TestAckerRetriesTransientErrors(t *testing.T) {
	f := faults{unaryErr: func(method string, call int) error {
		if call <= 2 {
			return conn.Errorf(codes.Unavailable, "injected")
		}
		return nil
	}}
	a := newAcker(t, &f)
	n, err := a.ack(context.Background(), manyIDs(10))
	if err != nil || n != 10 {
		t.Fatalf("ack = %d, %v; want success on the third attempt", n, err)
	}
	if got := len(f.calls("Acknowledge")); got != 3 {
		t.Errorf("%d attempts, want 3", got)
	}
}

func TestAckerRetriesAreBounded(t *testing.T) {
	f := faults{unaryErr: func(string, int) error { return conn.Errorf(codes.Unavailable, "injected") }}
	a := newAcker(t, &f)
	n, err := a.ack(context.Background(), manyIDs(10))
	if conn.Code(err) != codes.Unavailable || n != 0 {
		t.Fatalf("ack = %d, %v; want 0 and UNAVAILABLE", n, err)
	}
	if got := len(f.calls("Acknowledge")); got != a.attempts {
		t.Errorf("%d attempts, want %d", got, a.attempts)
	}
}

func TestAckerDoesNotRetryPermanentErrors(t *testing.T) {
	f := faults{unaryErr: func(string, int) error { return conn.Errorf(codes.InvalidArgument, "bad ack id") }}
	a := newAcker(t, &f)
	_, err := a.modack(context.Background(), manyIDs(3), 10)
	if conn.Code(err) != codes.InvalidArgument {
		t.Fatalf("modack = %v, want INVALID_ARGUMENT", err)
	}
	if got := len(f.calls("ModifyAckDeadline")); got != 1 {
		t.Errorf("%d attempts of a permanent error, want 1", got)
	}
}
