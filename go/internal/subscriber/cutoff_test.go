package subscriber

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

func msgAt(id string, sec int64, nanos int32) wire.Message {
	return wire.Message{AckID: []byte("ack-" + id), MessageID: []byte(id), HasPublishTime: true,
		PublishSeconds: sec, PublishNanos: nanos}
}

// The cut-off compares at the publish_time column's microseconds: a
// message in the cut-off's microsecond is the run's, one a microsecond
// later is not. The rest keep their order; no publish time: kept.
func TestPublishCutoffDropsWhatWasPublishedAfterItInOrder(t *testing.T) {
	c := publishCutoff{us: 500_000_000} // 500 s after the epoch
	msgs := []wire.Message{
		msgAt("a", 499, 0),
		msgAt("late1", 500, 1_000), // 1 µs after
		msgAt("b", 500, 999),       // within the cut-off's microsecond
		{AckID: []byte("ack-c"), MessageID: []byte("c")},
		msgAt("late2", 501, 0),
		msgAt("d", 500, 0),
	}
	want := msgs[1].Size() + msgs[4].Size()
	kept, late, lateBytes := c.drop(msgs)
	var ids []string
	for i := range kept {
		ids = append(ids, string(kept[i].MessageID))
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d"}) || late != 2 || lateBytes != want {
		t.Fatalf("kept %v, late %d (%d bytes); want [a b c d], 2 (%d bytes)", ids, late, lateBytes, want)
	}
	none := []wire.Message{msgAt("x", 1_000_000, 0)}
	if kept, late, _ := (publishCutoff{}).drop(none); len(kept) != 1 || late != 0 {
		t.Fatalf("without a cut-off: kept %d, late %d; want everything kept", len(kept), late)
	}
}

// A subscriber with a cut-off hands out exactly what was published up to
// it. What was published later is released where it arrives: not held,
// not nacked, not handed out, and it does not count as an arrival for the
// end-of-backlog evidence.
func TestSubscriberReleasesWhatWasPublishedAfterTheCutoff(t *testing.T) {
	srv := newServer(t)
	before := publish(srv, 5)
	time.Sleep(5 * time.Millisecond)
	cutoff := time.Now().UnixMicro()
	time.Sleep(5 * time.Millisecond)
	publish(srv, 7)
	cfg := testConfig(srv)
	cfg.ArrivalCutoffUs = cutoff
	s := openTest(t, cfg, fast)

	var got []row
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 5 || s.Stats().Late < 7 {
		if time.Now().After(deadline) {
			t.Fatalf("got %d rows and %d late after 10 s, want 5 and 7; stats %+v", len(got), s.Stats().Late, s.Stats())
		}
		b, err := s.Next(context.Background(), 100, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rows(t, b)...)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.id)
	}
	slices.Sort(ids)
	slices.Sort(before)
	if !slices.Equal(ids, before) {
		t.Fatalf("handed out %v, want exactly the messages published before the cut-off %v", ids, before)
	}
	st := s.Stats()
	if st.Pulled != 12 || st.Late != 7 || st.Held != 5 || st.Buffered != 0 || st.Nacked != 0 {
		t.Errorf("stats %+v, want pulled=12 late=7 held=5 buffered=0 nacked=0", st)
	}
	// The late messages arrived after the subscriber opened, yet the quiet
	// clock counts from its streams going live, as if nothing had come.
	time.Sleep(300 * time.Millisecond)
	if q := s.Stats().QuietMs; q < 300 {
		t.Errorf("quiet_ms %d after late arrivals only, want >= 300", q)
	}
	if err := s.Ack(ackIDs(got)); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRejectsANegativeCutoff(t *testing.T) {
	srv := newServer(t)
	cfg := testConfig(srv)
	cfg.ArrivalCutoffUs = -1
	if _, err := Open(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "arrival_cutoff_us") {
		t.Fatalf("Open = %v, want an error naming arrival_cutoff_us", err)
	}
}
