package subscriber

import (
	"fmt"
	"testing"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

func TestSeenSetIsBounded(t *testing.T) {
	s := newSeenSet(3)
	for _, id := range []string{"a", "b", "c"} {
		if s.add([]byte(id)) {
			t.Errorf("%s seen before it was added", id)
		}
	}
	if !s.add([]byte("a")) {
		t.Error("a not remembered")
	}
	s.add([]byte("d")) // evicts the oldest, a
	if len(s.ids) != 3 {
		t.Errorf("set holds %d ids, capacity 3", len(s.ids))
	}
	if s.add([]byte("a")) {
		t.Error("a still remembered past capacity")
	}
	for i := range 1000 {
		s.add([]byte(fmt.Sprint(i)))
	}
	if len(s.ids) != 3 {
		t.Errorf("set grew to %d ids", len(s.ids))
	}
}

func TestRedelivered(t *testing.T) {
	s := newSeenSet(10)
	msg := func(id string, attempt int32) *wire.Message {
		return &wire.Message{MessageID: []byte(id), DeliveryAttempt: attempt}
	}
	if s.redelivered(msg("a", 0)) {
		t.Error("first delivery counted as a redelivery")
	}
	if !s.redelivered(msg("a", 0)) {
		t.Error("second delivery of a not counted")
	}
	if !s.redelivered(msg("b", 2)) {
		t.Error("delivery attempt 2 from the server not counted")
	}
	if s.redelivered(msg("c", 1)) {
		t.Error("delivery attempt 1 counted")
	}
}
