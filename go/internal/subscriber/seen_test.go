package subscriber

import (
	"fmt"
	"testing"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

func TestSeenSetRemembersRecentIdsInFixedMemory(t *testing.T) {
	s := newSeenSet(1000)
	slots := len(s.slots)
	for i := range 1000 {
		if s.add(fmt.Appendf(nil, "id-%d", i)) {
			t.Fatalf("id-%d seen before it was added", i)
		}
	}
	remembered := 0
	for i := range 1000 {
		if s.add(fmt.Appendf(nil, "id-%d", i)) {
			remembered++
		}
	}
	// A direct-mapped table of 2048 slots keeps about 60% of 1000 ids
	// checked this way (a forgotten id re-added evicts another): 570-660
	// over 200 simulated seeds; a table that forgets is near 0.
	if remembered < 400 {
		t.Errorf("only %d of the last 1000 ids remembered", remembered)
	}
	for i := range 100_000 {
		s.add(fmt.Appendf(nil, "other-%d", i))
	}
	if len(s.slots) != slots {
		t.Errorf("table grew from %d to %d slots", slots, len(s.slots))
	}
	if s.add(nil) || s.add(nil) {
		t.Error("an empty id counted as seen")
	}
}

func TestRedeliveries(t *testing.T) {
	s := newSeenSet(10)
	msg := func(id string, attempt int32) wire.Message {
		return wire.Message{MessageID: []byte(id), DeliveryAttempt: attempt}
	}
	if n := s.redeliveries([]wire.Message{msg("a", 0)}); n != 0 {
		t.Error("first delivery counted as a redelivery")
	}
	if n := s.redeliveries([]wire.Message{msg("a", 0), msg("b", 2), msg("c", 1)}); n != 2 {
		t.Errorf("redeliveries = %d, want 2: a again, and b by its delivery attempt (c's attempt 1 is the first)", n)
	}
}

// redeliveries checks ids through a prefetching pipeline; it must count
// exactly what checking them one by one counts, repeats at every distance
// from the pipeline's depth included, and empty ids never.
func TestRedeliveriesPipelineMatchesOneByOne(t *testing.T) {
	for _, n := range []int{0, 1, seenAhead - 1, seenAhead, seenAhead + 1, 2 * seenAhead, 2*seenAhead + 3, 500} {
		piped := newSeenSet(1 << 10)
		plain := newSeenSet(1 << 10)
		plain.seed = piped.seed
		msgs := make([]wire.Message, n)
		for i := range msgs {
			// Every third id repeats one 1..2*seenAhead+1 messages back;
			// every seventh is empty.
			id := fmt.Sprintf("m-%d", i)
			if i%3 == 0 && i > 0 {
				id = string(msgs[max(0, i-1-i%(2*seenAhead+1))].MessageID)
			}
			if i%7 == 0 {
				id = ""
			}
			msgs[i] = wire.Message{MessageID: []byte(id), DeliveryAttempt: int32(i % 4)}
		}
		var want int64
		for _, m := range msgs {
			if plain.add(m.MessageID) || m.DeliveryAttempt > 1 {
				want++
			}
		}
		if got := piped.redeliveries(msgs); got != want {
			t.Errorf("%d messages: redeliveries = %d, checked one by one %d", n, got, want)
		}
	}
}
