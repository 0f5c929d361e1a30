package subscriber

import (
	"fmt"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/conn"
)

func received(ids ...string) ([]*pb.ReceivedMessage, []int64) {
	msgs := make([]*pb.ReceivedMessage, len(ids))
	sizes := make([]int64, len(ids))
	for i, id := range ids {
		msgs[i] = &pb.ReceivedMessage{AckId: "ack-" + id, Message: &pb.PubsubMessage{MessageId: id, Data: []byte("data")}}
		sizes[i] = 10
	}
	return msgs, sizes
}

func takenIDs(msgs []*pb.ReceivedMessage) string {
	var s []string
	for _, m := range msgs {
		s = append(s, m.GetMessage().GetMessageId())
	}
	return fmt.Sprint(s)
}

func TestReservoirHandsOutInArrivalOrder(t *testing.T) {
	fc := newFlowController(100, 1<<20)
	r := newReservoir(fc)
	r.addIDs("a", "b", "c")
	r.addIDs("d", "e")

	msgs, wake, err := r.take(6, false)
	if err != nil || msgs != nil || wake == nil {
		t.Fatalf("take(6) of 5 = %v %v %v, want a channel to wait on", msgs, wake, err)
	}
	msgs, _, _ = r.take(2, false)
	if got := takenIDs(msgs); got != "[a b]" {
		t.Errorf("first take = %s, want [a b]", got)
	}
	// A buffered message acked (by id, from elsewhere) is skipped.
	r.remove([]string{"ack-c"})
	msgs, _, _ = r.take(10, true)
	if got := takenIDs(msgs); got != "[d e]" {
		t.Errorf("partial take = %s, want [d e]", got)
	}
	if held, buffered := r.len(); held != 4 || buffered != 0 {
		t.Errorf("held=%d buffered=%d, want 4 0", held, buffered)
	}
	if fc.held() != 4 {
		t.Errorf("flow control counts %d, want 4", fc.held())
	}
	msgs, wake, err = r.take(1, true)
	if err != nil || len(msgs) != 0 || wake != nil {
		t.Errorf("partial take of nothing = %v %v %v, want empty", msgs, wake, err)
	}
}

func (r *reservoir) addIDs(ids ...string) {
	msgs, sizes := received(ids...)
	r.add(msgs, sizes, time.Now(), time.Minute)
}

func TestReservoirWakesWaiters(t *testing.T) {
	r := newReservoir(newFlowController(100, 1<<20))
	_, wake, _ := r.take(1, false)
	r.addIDs("a")
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("add did not wake the waiter")
	}
	_, wake, _ = r.take(2, false)
	r.fail(conn.Errorf(codes.PermissionDenied, "no"))
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("fail did not wake the waiter")
	}
	if _, _, err := r.take(1, true); conn.Code(err) != codes.PermissionDenied {
		t.Errorf("take after fail = %v, want PERMISSION_DENIED", err)
	}
	r.close()
	if _, _, err := r.take(1, true); conn.Code(err) != codes.FailedPrecondition {
		t.Errorf("take after close = %v, want FAILED_PRECONDITION", err)
	}
}

func TestReservoirDrainReturnsOnlyBuffered(t *testing.T) {
	fc := newFlowController(100, 1<<20)
	r := newReservoir(fc)
	r.addIDs("a", "b", "c", "d")
	r.take(1, false)            // a handed out
	r.remove([]string{"ack-c"}) // c acked while buffered
	r.close()
	r.addIDs("e") // arrives while streams stop: still nacked
	if got := fmt.Sprint(r.drain()); got != "[ack-b ack-d ack-e]" {
		t.Errorf("drain = %s, want [ack-b ack-d ack-e]", got)
	}
	if held, buffered := r.len(); held != 0 || buffered != 0 || fc.held() != 0 {
		t.Errorf("after drain held=%d buffered=%d flow=%d, want 0", held, buffered, fc.held())
	}
}

func TestReservoirRemoveReleasesFlowControl(t *testing.T) {
	fc := newFlowController(2, 1<<20)
	r := newReservoir(fc)
	r.addIDs("a", "b")
	if !fc.full() {
		t.Fatal("2 of 2 held: not full")
	}
	msgs, _, _ := r.take(2, false)
	if len(msgs) != 2 || !fc.full() {
		t.Fatal("handed-out messages must still count as held")
	}
	r.remove([]string{"ack-a", "unknown"})
	if fc.full() || fc.held() != 1 {
		t.Errorf("after removing one: held=%d full=%v", fc.held(), fc.full())
	}
}
