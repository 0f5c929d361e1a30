package subscriber

import (
	"testing"
	"time"
)

// A subscriber receiving messages older than the lag grows to
// CatchUpStreams; one receiving fresh messages keeps Streams; the added
// streams end with Close like the first (openTest checks no goroutine is
// left).
func TestStreamsGrowOnlyWhileCatchingUp(t *testing.T) {
	for _, c := range []struct {
		name  string
		lagMs int
		want  int
	}{
		{"backlog", 1, 3},      // everything is older than 1 ms when it arrives
		{"live", 3_600_000, 1}, // nothing is an hour old
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t)
			publish(srv, 300)
			time.Sleep(20 * time.Millisecond)
			var f faults
			cfg := testConfig(srv)
			cfg.Streams, cfg.CatchUpStreams, cfg.CatchUpLagMs = 1, 3, c.lagMs
			cfg.MaxOutstandingMessages = 20 // the backlog keeps arriving while the test reads
			s := openTest(t, cfg, fast, f.options()...)
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) && (c.want == 1 || f.streamCount() < c.want) {
				rs := nextRows(t, s, 5, time.Second)
				if err := s.Ack(ackIDs(rs)); err != nil {
					t.Fatal(err)
				}
			}
			if n, st := f.streamCount(), s.Stats().Streams; n != c.want || st != int64(c.want) {
				t.Errorf("%d streams (stats: %d), want %d", n, st, c.want)
			}
			if st := s.Stats(); st.Pulled == 0 {
				t.Errorf("nothing pulled: %+v", st)
			}
		})
	}
}
