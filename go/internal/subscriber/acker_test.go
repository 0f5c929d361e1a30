package subscriber

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// newAcker returns an acker talking to pstest through f.
func newAcker(t *testing.T, f *faults) *acker {
	t.Helper()
	srv := newServer(t)
	opts := append(clientopt.Options{EmulatorHost: srv.Addr}.ClientOptions(), f.options()...)
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
		retry:        rpc.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond},
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
	if err != nil || n.Done != 6000 {
		t.Fatalf("ack = %v, %v; want 6000, nil", n, err)
	}
	got := f.calls("Acknowledge")
	slices.Sort(got)
	if fmt.Sprint(got) != "[1000 2500 2500]" {
		t.Errorf("Acknowledge calls carried %v ids, want [1000 2500 2500]", got)
	}
	n, err = a.modack(context.Background(), manyIDs(2500), 0)
	if err != nil || n.Done != 2500 {
		t.Fatalf("modack = %v, %v", n, err)
	}
	if got := f.calls("ModifyAckDeadline"); fmt.Sprint(got) != "[2500]" || f.modacks[0] != 0 {
		t.Errorf("ModifyAckDeadline calls %v deadlines %v, want one of 2500 ids with deadline 0", got, f.modacks)
	}
	if n, err := a.ack(context.Background(), nil); n.Done != 0 || err != nil || len(f.calls("Acknowledge")) != 3 {
		t.Errorf("ack of no ids = %v, %v and sent a request", n, err)
	}
}

func TestAckerRetriesTransientErrors(t *testing.T) {
	f := faults{unaryErr: func(method string, call int) error {
		if call <= 2 {
			return rpc.Errorf(codes.Unavailable, "injected")
		}
		return nil
	}}
	a := newAcker(t, &f)
	n, err := a.ack(context.Background(), manyIDs(10))
	if err != nil || n.Done != 10 {
		t.Fatalf("ack = %v, %v; want success on the third attempt", n, err)
	}
	if got := len(f.calls("Acknowledge")); got != 3 {
		t.Errorf("%d attempts, want 3", got)
	}
}

func TestAckerRetriesAreBounded(t *testing.T) {
	f := faults{unaryErr: func(string, int) error { return rpc.Errorf(codes.Unavailable, "injected") }}
	a := newAcker(t, &f)
	n, err := a.ack(context.Background(), manyIDs(10))
	if rpc.Code(err) != codes.Unavailable || n.Done != 0 {
		t.Fatalf("ack = %v, %v; want 0 and UNAVAILABLE", n, err)
	}
	if got := len(f.calls("Acknowledge")); got != a.attempts {
		t.Errorf("%d attempts, want %d", got, a.attempts)
	}
}

func TestAckerDoesNotRetryPermanentErrors(t *testing.T) {
	f := faults{unaryErr: func(string, int) error { return rpc.Errorf(codes.InvalidArgument, "bad ack id") }}
	a := newAcker(t, &f)
	_, err := a.modack(context.Background(), manyIDs(3), 10)
	if rpc.Code(err) != codes.InvalidArgument {
		t.Fatalf("modack = %v, want INVALID_ARGUMENT", err)
	}
	if got := len(f.calls("ModifyAckDeadline")); got != 1 {
		t.Errorf("%d attempts of a permanent error, want 1", got)
	}
}

// eodError is what Pub/Sub answers on a subscription with exactly-once
// delivery when some ack ids fail: a status with ErrorInfo metadata
// mapping each failed ack id to a reason.
func eodError(code codes.Code, failed map[string]string) error {
	st, err := status.New(code, "Some acknowledgement ids in the request were invalid.").WithDetails(&errdetails.ErrorInfo{
		Reason: "EXACTLY_ONCE_ACKID_FAILURE", Domain: "pubsub.googleapis.com", Metadata: failed,
	})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func TestAckerExactlyOnceRetriesTransientIDsAndRejectsPermanentOnes(t *testing.T) {
	var mu sync.Mutex
	var sent [][]string
	f := faults{idsErr: func(method string, call int, ids []string) error {
		mu.Lock()
		sent = append(sent, append([]string(nil), ids...))
		mu.Unlock()
		failed := map[string]string{}
		for _, id := range ids {
			switch {
			case id == "m1:1" || id == "m2:1":
				failed[id] = "PERMANENT_FAILURE_INVALID_ACK_ID"
			case id == "m3:1" && call < 3:
				failed[id] = "TRANSIENT_FAILURE_UNORDERED_ACK_ID"
			}
		}
		if len(failed) == 0 {
			return nil
		}
		return eodError(codes.InvalidArgument, failed)
	}}
	a := newAcker(t, &f)
	out, err := a.ack(context.Background(), manyIDs(10))
	if err != nil {
		t.Fatalf("ack = %v, %v; want the transient id retried to success", out, err)
	}
	// As in Google's clients: listed permanent ids are rejected with their
	// reason, the listed transient one is retried alone until it succeeds,
	// and unlisted ids share the fate of the status code (INVALID_ARGUMENT
	// is not transient: rejected, never counted as acked).
	want := map[string]int{"PERMANENT_FAILURE_INVALID_ACK_ID": 2, "InvalidArgument": 7}
	if out.Done != 1 || fmt.Sprint(out.Rejected) != fmt.Sprint(want) {
		t.Fatalf("outcome %+v; want m3 done after its retries, rejected %v", out, want)
	}
	if len(sent) != 3 || len(sent[0]) != 10 || fmt.Sprint(sent[1:]) != "[[m3:1] [m3:1]]" {
		t.Fatalf("requests %v; want all ids once, then only the transient one", sent)
	}
}

func TestAckerExactlyOnceUnlistedIDsOfATransientStatusAreRetried(t *testing.T) {
	f := faults{idsErr: func(_ string, call int, ids []string) error {
		if call == 1 {
			return eodError(codes.Unavailable, map[string]string{"m0:1": "PERMANENT_FAILURE_INVALID_ACK_ID"})
		}
		return nil
	}}
	a := newAcker(t, &f)
	out, err := a.ack(context.Background(), manyIDs(5))
	if err != nil || out.Done != 4 || out.Rejected["PERMANENT_FAILURE_INVALID_ACK_ID"] != 1 {
		t.Fatalf("ack = %+v, %v; want 4 done on the retry, m0 rejected", out, err)
	}
	if got := f.calls("Acknowledge"); fmt.Sprint(got) != "[5 4]" {
		t.Errorf("calls carried %v ids, want [5 4]", got)
	}
}

func TestAckerExactlyOnceTransientIDsThatNeverSucceedAreAnError(t *testing.T) {
	f := faults{idsErr: func(_ string, _ int, ids []string) error {
		return eodError(codes.InvalidArgument, map[string]string{"m0:1": "TRANSIENT_FAILURE_UNORDERED_ACK_ID"})
	}}
	a := newAcker(t, &f)
	out, err := a.ack(context.Background(), manyIDs(3))
	if rpc.Code(err) != codes.Unavailable || out.Done != 0 || out.RejectedCount() != 2 {
		t.Fatalf("ack = %+v, %v; want UNAVAILABLE for the transient id, the unlisted ids rejected with the status code", out, err)
	}
	if out.Rejected["InvalidArgument"] != 2 {
		t.Errorf("unlisted ids should share the status code's fate (as in Google's clients): %+v", out)
	}
}

func TestSubscriberCountsRejectedAcksAndNeverAsAcked(t *testing.T) {
	f := faults{idsErr: func(method string, _ int, ids []string) error {
		if method != "Acknowledge" {
			return nil
		}
		failed := map[string]string{}
		for _, id := range ids[:len(ids)/2] {
			failed[id] = "PERMANENT_FAILURE_INVALID_ACK_ID"
		}
		return eodError(codes.FailedPrecondition, failed)
	}}
	srv := newServer(t)
	cfg := testConfig(srv)
	cfg.NoPull = true
	s := openTest(t, cfg, fast, f.options()...)
	ids := manyIDs(8)
	out, err := s.AckWithResults(ids)
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	// FAILED_PRECONDITION is not transient: the unlisted half is rejected too.
	if out.Done != 0 || st.Acked != 0 || st.AckRejected != 8 {
		t.Fatalf("outcome %+v, stats acked %d rejected %d; want none acked, 8 rejected", out, st.Acked, st.AckRejected)
	}
}
