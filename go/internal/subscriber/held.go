package subscriber

import (
	"hash/maphash"
	"sort"
)

// heldSet is the reservoir's index of held messages: received and not yet
// acked, nacked, released or expired.
//
// It is a list of slabs in arrival order (one per response the streams
// delivered) rather than a map of every held message. A map entry per
// message, inserted on arrival and deleted when the task hands its lease
// on, was ~5% of a Spark run's CPU (mapassign, mapaccess, hashing);
// go test -bench HeldRelease compares the two. Callers release, ack and
// modack in the order they took messages, which is arrival order, so a
// lookup is usually one string comparison at a cursor: the entry after the
// last one found, or the oldest held entry. Only a lookup that misses both
// builds (once, then extends) a hash index, so callers that ack out of
// order still get O(1) lookups.
//
// Not safe for concurrent use: the reservoir's mu guards it.
type heldSet struct {
	slabs []*slab // arrival order; a slab leaves when its last entry does
	count int     // live entries
	seq   uint64  // the next slab's seq
	dead  bool    // a slab has no live entry left: compact has work

	// Positions (slab index, entry index) kept so that no lookup rescans
	// what an earlier one skipped; entries never come back to life, so
	// both only move forward until compact renumbers the slabs.
	cur  pos // the entry after the last one found: the next in-order lookup
	head pos // no live entry before it: where a new in-order pass starts

	// index: by hash of the ack id, built on a lookup that misses the
	// cursor and the head, over slabs[:indexed]; nil until then.
	index   map[uint64]*entry
	indexed int
	seed    maphash.Seed
}

// pos is a place in the slab list: slab index, entry index.
type pos struct{ s, e int }

// slab is the entries of one add, one allocation.
type slab struct {
	entries []entry
	live    int
	seq     uint64 // increasing in arrival order: finds a slab's index by binary search
}

func newHeldSet() *heldSet { return &heldSet{seed: maphash.MakeSeed()} }

// add holds the entries of s, which are all live.
func (h *heldSet) add(s *slab) {
	s.live, s.seq = len(s.entries), h.seq
	h.seq++
	for i := range s.entries {
		s.entries[i].slab, s.entries[i].pos = s, int32(i)
	}
	h.slabs = append(h.slabs, s)
	h.count += s.live
}

// lookup finds a held entry by ack id, or nil.
func (h *heldSet) lookup(id string) *entry {
	if e := h.match(&h.cur, id); e != nil {
		return e
	}
	// A new in-order pass starts at the oldest held entry.
	if e := h.match(&h.head, id); e != nil {
		return e
	}
	if len(h.slabs) == 0 {
		return nil
	}
	h.extendIndex()
	if e := h.index[maphash.String(h.seed, id)]; e != nil && !e.gone && e.ackID == id {
		h.cur = pos{h.slabIndex(e.slab), int(e.pos) + 1}
		return e
	}
	return nil
}

// match moves *p to the first live entry at or after it and, if that
// entry's ack id is id, moves the cursor past it and returns it.
func (h *heldSet) match(p *pos, id string) *entry {
	for p.s < len(h.slabs) {
		s := h.slabs[p.s]
		if s.live > 0 {
			for p.e < len(s.entries) && s.entries[p.e].gone {
				p.e++
			}
			if p.e < len(s.entries) {
				e := &s.entries[p.e]
				if e.ackID != id {
					return nil
				}
				h.cur = pos{p.s, p.e + 1}
				return e
			}
		}
		*p = pos{p.s + 1, 0}
	}
	return nil
}

// slabIndex is the index of s, which is held, in h.slabs.
func (h *heldSet) slabIndex(s *slab) int {
	return sort.Search(len(h.slabs), func(i int) bool { return h.slabs[i].seq >= s.seq })
}

// extendIndex indexes the slabs added since the index was last extended.
func (h *heldSet) extendIndex() {
	if h.index == nil {
		h.index = make(map[uint64]*entry, h.count)
		h.indexed = 0
	}
	for _, s := range h.slabs[h.indexed:] {
		for i := range s.entries {
			if e := &s.entries[i]; !e.gone {
				h.index[maphash.String(h.seed, e.ackID)] = e
			}
		}
	}
	h.indexed = len(h.slabs)
}

// forget stops holding e; the caller releases flow control. Call compact
// after a run of forgets: slabs left with no live entry stay until then.
func (h *heldSet) forget(e *entry) {
	if e.gone {
		return
	}
	e.gone = true
	e.slab.live--
	h.count--
	if e.slab.live == 0 {
		h.dead = true
	}
	if h.index != nil {
		if k := maphash.String(h.seed, e.ackID); h.index[k] == e {
			delete(h.index, k)
		}
	}
}

// each calls f for every held entry, oldest first; f may forget it.
// Slabs with no live entry left are dropped afterwards.
func (h *heldSet) each(f func(*entry)) {
	for _, s := range h.slabs {
		if s.live == 0 {
			continue
		}
		for i := range s.entries {
			if e := &s.entries[i]; !e.gone {
				f(e)
			}
		}
	}
	h.compact()
}

// compact drops slabs whose entries are all gone, so their memory (and
// their ack ids) can be freed, and renumbers the positions and the index.
func (h *heldSet) compact() {
	if !h.dead {
		return
	}
	h.dead = false
	kept := h.slabs[:0]
	cur, head, indexed := h.cur, h.head, 0
	for i, s := range h.slabs {
		if s.live == 0 {
			// A position in a slab that leaves moves to the start of the next.
			if i == h.cur.s {
				cur.e = 0
			}
			if i == h.head.s {
				head.e = 0
			}
			if i < h.cur.s {
				cur.s--
			}
			if i < h.head.s {
				head.s--
			}
			continue
		}
		if i < h.indexed {
			indexed++
		}
		kept = append(kept, s)
	}
	clear(h.slabs[len(kept):])
	h.slabs, h.cur, h.head, h.indexed = kept, cur, head, indexed
	if indexed == 0 {
		// Every indexed slab has left: back to lookups by comparison only,
		// with no per-message index work on forget.
		h.index = nil
	}
}
