package subscriber

import (
	"slices"
	"testing"
)

func TestStatsJSONKeys(t *testing.T) {
	want := []string{"pulled", "handed_out", "held", "acked", "nacked", "extended", "redeliveries", "decode_errors", "bytes_pulled", "streams_restarted", "nacked_on_close", "buffered", "quiet_ms", "ack_rejected", "modack_rejected", "flow_full_ms", "streams_down_ms", "blocked_ms", "late", "streams"}
	got := jsonKeys(t, Stats{})
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Stats JSON keys %v, want %v", got, want)
	}
}

func TestSnapshotReadsEveryCounter(t *testing.T) {
	var c counters
	for i, v := range []interface{ Add(int64) int64 }{
		&c.pulled, &c.handedOut, &c.acked, &c.nacked, &c.extended,
		&c.redeliveries, &c.decodeErrors, &c.bytesPulled, &c.streamsRestarted, &c.nackedOnClose, &c.ackRejected, &c.modackRejected, &c.late,
	} {
		v.Add(int64(i + 1))
	}
	got := c.snapshot(42)
	want := Stats{Pulled: 1, HandedOut: 2, Held: 42, Acked: 3, Nacked: 4, Extended: 5, Redeliveries: 6, DecodeErrors: 7, BytesPulled: 8, StreamsRestarted: 9, NackedOnClose: 10, AckRejected: 11, ModackRejected: 12, Late: 13}
	if got != want {
		t.Errorf("snapshot = %+v, want %+v", got, want)
	}
}
