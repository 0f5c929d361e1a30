package main

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func TestAckIDRoundTrip(t *testing.T) {
	for _, c := range [][2]uint64{{1, 1}, {35, 36}, {1 << 40, 1<<64 - 1}} {
		id := string(appendAckID(nil, c[0], c[1]))
		l, s, ok := parseAckID(id)
		if !ok || l != c[0] || s != c[1] {
			t.Errorf("parseAckID(%q) = %d, %d, %v; want %d, %d", id, l, s, ok, c[0], c[1])
		}
	}
	// 3w5e11264sgsg is 2^64 in base 36.
	for _, bad := range []string{"", "1", "-1", "1-", "x!-1", "1-zzzzzzzzzzzzzzzzzzzzz", "1-3w5e11264sgsg", "A-1", "1-1-1", "1-+1"} {
		if _, _, ok := parseAckID(bad); ok {
			t.Errorf("parseAckID(%q) accepted", bad)
		}
	}
}

func TestLeaseCreditAndSettle(t *testing.T) {
	sub := newSubscription(nil, 0)
	l := newLease(1, sub, 100, 4, 350, time.Minute)
	if k := l.credit(10); k != 3 { // 350 bytes / 100 per message
		t.Fatalf("credit = %d, want 3", k)
	}
	now := time.Now()
	first := l.record([]pending{{msg: 10, attempt: 1}, {msg: 11, attempt: 1}, {msg: 12, attempt: 1}}, now)
	if first != 1 || l.credit(10) != 0 {
		t.Fatalf("first seq %d, credit %d", first, l.credit(10))
	}
	// Out-of-order ack: the window keeps seq 1 until it settles too.
	if hits := l.ack([]uint64{2, 2, 99}); hits != 1 {
		t.Fatalf("ack hits = %d, want 1", hits)
	}
	if l.first != 1 || l.n != 3 || l.credit(10) != 1 {
		t.Fatalf("window first=%d n=%d credit=%d", l.first, l.n, l.credit(10))
	}
	hits, requeue := l.modify([]uint64{1}, 0, now)
	if hits != 1 || len(requeue) != 1 || requeue[0] != (pending{msg: 10, attempt: 2}) {
		t.Fatalf("nack = %d, %v", hits, requeue)
	}
	if l.first != 3 || l.n != 1 {
		t.Fatalf("after trimming: first=%d n=%d", l.first, l.n)
	}
	if got := l.expire(now.Add(2 * time.Minute)); len(got) != 1 || got[0].msg != 12 {
		t.Fatalf("expire = %v", got)
	}
	if out, hw, _ := l.state(); out != 0 || hw != 3 {
		t.Fatalf("outstanding %d high-water %d", out, hw)
	}
}

func TestLeaseRingGrows(t *testing.T) {
	l := newLease(1, newSubscription(nil, 0), 1, 0, 0, time.Minute)
	now := time.Now()
	var seqs []uint64
	for i := range 5000 { // more than the initial ring
		seqs = append(seqs, l.record([]pending{{msg: uint64(i), attempt: 1}}, now))
	}
	// Keep seq 1 unsettled so the window cannot shrink, ack the rest.
	if hits := l.ack(seqs[1:]); hits != 4999 {
		t.Fatalf("hits = %d", hits)
	}
	if l.n != 5000 || l.outstanding != 1 {
		t.Fatalf("n=%d outstanding=%d", l.n, l.outstanding)
	}
	if hits := l.ack(seqs[:1]); hits != 1 || l.n != 0 {
		t.Fatalf("hits=%d n=%d", hits, l.n)
	}
}

func TestSubscriptionClaim(t *testing.T) {
	s := newSubscription(nil, 5)
	got, _ := s.claim(nil, 3)
	if len(got) != 3 || got[2].msg != 2 {
		t.Fatalf("claim = %v", got)
	}
	_, avail := s.claim(nil, 0)
	s.requeue([]pending{{msg: 1, attempt: 2}})
	select {
	case <-avail:
	default:
		t.Fatal("requeue did not signal")
	}
	got, _ = s.claim(nil, 10) // the redelivery, then the 2 left
	if len(got) != 3 || got[0] != (pending{msg: 1, attempt: 2}) || got[2].msg != 4 {
		t.Fatalf("claim = %v", got)
	}
	if got, _ = s.claim(nil, 10); len(got) != 0 {
		t.Fatalf("exhausted claim = %v", got)
	}
}

func TestSubscriptionClaimPaced(t *testing.T) {
	s := newSubscription(nil, 0)
	born := time.Unix(100, 0)
	s.rate, s.born = 1000, born // message n is available at born + (n+1) ms
	got, _, wait := s.claimPaced(nil, 100, born.Add(10500*time.Microsecond))
	if len(got) != 10 || got[9].msg != 9 || !s.availableAt(9).Equal(born.Add(10*time.Millisecond)) || wait != 0 {
		t.Fatalf("claimPaced = %d msgs, message 9 at %v, wait %v", len(got), s.availableAt(9).Sub(born), wait)
	}
	got, _, wait = s.claimPaced(nil, 100, born.Add(10600*time.Microsecond))
	if len(got) != 0 || wait != 400*time.Microsecond {
		t.Fatalf("nothing available: %d msgs, wait %v", len(got), wait)
	}
	got, _, _ = s.claimPaced(nil, 3, born.Add(time.Second)) // backlog, capped by k
	if len(got) != 3 || got[0].msg != 10 {
		t.Fatalf("claimPaced backlog = %v", got)
	}
}

func TestCodeParsing(t *testing.T) {
	for in, want := range map[string]codes.Code{"UNAVAILABLE": codes.Unavailable, "resource_exhausted": codes.ResourceExhausted, "7": codes.PermissionDenied} {
		var c Code
		if err := c.Set(in); err != nil || codes.Code(c) != want {
			t.Errorf("Set(%q) = %v, %v; want %v", in, c, err, want)
		}
	}
	for _, bad := range []string{"", "null", "17", "Unavailablex"} {
		var c Code
		if err := c.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

func TestOptionsLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "localhost:80": true, "[::1]:0": true, "0.0.0.0:0": false, ":8085": false, "10.0.0.1:1": false} {
		o := defaultOptions()
		o.addr = addr
		if err := o.validate(); (err == nil) != ok {
			t.Errorf("validate(%q) = %v", addr, err)
		}
	}
}
