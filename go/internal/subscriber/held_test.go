package subscriber

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// heldSlabs adds slabs of the given sizes with ack ids "a0", "a1", ... in
// order and returns the ids.
func heldSlabs(h *heldSet, sizes ...int) []string {
	var ids []string
	for _, n := range sizes {
		s := &slab{entries: make([]entry, n)}
		for i := range s.entries {
			id := fmt.Sprintf("a%d", len(ids))
			s.entries[i] = entry{ackID: id, size: 1}
			ids = append(ids, id)
		}
		h.add(s)
	}
	return ids
}

func TestHeldInOrderNeedsNoIndex(t *testing.T) {
	h := newHeldSet()
	ids := heldSlabs(h, 3, 1, 4)
	// A modack pass (lookup only), then a release pass (lookup and forget),
	// both in arrival order, as a Spark task's hand-over does.
	for _, id := range ids {
		if e := h.lookup(id); e == nil || e.ackID != id {
			t.Fatalf("lookup(%s) = %v", id, e)
		}
	}
	for _, id := range ids[:5] {
		h.forget(h.lookup(id))
	}
	h.compact()
	if h.index != nil {
		t.Errorf("in-order lookups built a hash index")
	}
	if h.count != 3 || len(h.slabs) != 1 {
		t.Errorf("count=%d slabs=%d, want 3 1", h.count, len(h.slabs))
	}
	if e := h.lookup("a2"); e != nil {
		t.Errorf("a forgotten id was found")
	}
}

func TestHeldOutOfOrderAndUnknown(t *testing.T) {
	h := newHeldSet()
	ids := heldSlabs(h, 2, 2, 2)
	if e := h.lookup("a4"); e == nil || e.ackID != "a4" {
		t.Fatalf("lookup(a4) out of order = %v", e)
	}
	// The cursor continues after an index hit.
	if e := h.lookup("a5"); e == nil || e.ackID != "a5" {
		t.Fatalf("lookup(a5) = %v", e)
	}
	if e := h.lookup("nope"); e != nil {
		t.Errorf("unknown id found: %v", e)
	}
	// Slabs added after the index was built are found too.
	s := &slab{entries: []entry{{ackID: "late"}}}
	h.add(s)
	if e := h.lookup("late"); e == nil {
		t.Errorf("an id added after the index was built is not found")
	}
	for _, id := range append(ids, "late") {
		h.forget(h.lookup(id))
	}
	h.compact()
	if h.count != 0 || len(h.slabs) != 0 || h.index != nil {
		t.Errorf("after forgetting all: count=%d slabs=%d index=%v", h.count, len(h.slabs), h.index != nil)
	}
}

// TestHeldMatchesAMap runs random adds, lookups, forgets and compactions
// against a map of the live ids.
func TestHeldMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := newHeldSet()
	live := map[string]bool{}
	var all []string
	next := 0
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 2: // a response arrives
			s := &slab{entries: make([]entry, 1+rng.IntN(8))}
			for i := range s.entries {
				id := fmt.Sprintf("m%d", next)
				next++
				s.entries[i] = entry{ackID: id}
				live[id] = true
				all = append(all, id)
			}
			h.add(s)
		case op < 8: // release or ack one id: mostly the oldest live, sometimes any
			var id string
			if rng.IntN(4) > 0 {
				for _, c := range all {
					if live[c] {
						id = c
						break
					}
				}
			} else if len(all) > 0 {
				id = all[rng.IntN(len(all))]
			}
			e := h.lookup(id)
			if (e != nil) != live[id] || (e != nil && e.ackID != id) {
				t.Fatalf("step %d: lookup(%q) = %v, live %v", step, id, e, live[id])
			}
			if e != nil {
				h.forget(e)
				delete(live, id)
			}
		case op < 9:
			h.compact()
		default:
			n := 0
			h.each(func(e *entry) {
				n++
				if !live[e.ackID] {
					t.Fatalf("step %d: each visits %s, which is not held", step, e.ackID)
				}
			})
			if n != len(live) {
				t.Fatalf("step %d: each visited %d, want %d", step, n, len(live))
			}
		}
		if h.count != len(live) {
			t.Fatalf("step %d: count %d, want %d", step, h.count, len(live))
		}
	}
}

// BenchmarkHeldReleaseInOrder: what a Spark task's hand-over costs per
// message in the held index: add 1000-message slabs, then look up and
// forget every id in arrival order.
func BenchmarkHeldReleaseInOrder(b *testing.B) {
	const n = 100_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%0160d", i)
	}
	b.ResetTimer()
	for range b.N {
		h := newHeldSet()
		for off := 0; off < n; off += 1000 {
			s := &slab{entries: make([]entry, 1000)}
			for i := range s.entries {
				s.entries[i].ackID = ids[off+i]
			}
			h.add(s)
		}
		for _, id := range ids {
			h.forget(h.lookup(id))
		}
		h.compact()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

// BenchmarkHeldReleaseInOrderMap is the same work through the map the held
// set replaced (an entry per message by hash of its ack id), for comparison.
func BenchmarkHeldReleaseInOrderMap(b *testing.B) {
	const n = 100_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%0160d", i)
	}
	seed := maphash.MakeSeed()
	b.ResetTimer()
	for range b.N {
		m := map[uint64]*entry{}
		for off := 0; off < n; off += 1000 {
			s := make([]entry, 1000)
			for i := range s {
				s[i].ackID = ids[off+i]
				m[maphash.String(seed, s[i].ackID)] = &s[i]
			}
		}
		for _, id := range ids {
			k := maphash.String(seed, id)
			if e, ok := m[k]; ok && e.ackID == id {
				delete(m, k)
				e.gone = true
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

// BenchmarkHeldReleaseShuffledSmallSlabs: one message per slab (as Google's
// emulator and pstest deliver at low rates), released in random order in
// one call: every lookup goes through the index.
func BenchmarkHeldReleaseShuffledSmallSlabs(b *testing.B) {
	const n = 20_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%0160d", i)
	}
	order := rand.New(rand.NewPCG(3, 4)).Perm(n)
	b.ResetTimer()
	for range b.N {
		h := newHeldSet()
		for _, id := range ids {
			h.add(&slab{entries: []entry{{ackID: id}}})
		}
		for _, i := range order {
			h.forget(h.lookup(ids[i]))
		}
		h.compact()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}
