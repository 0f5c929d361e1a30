package subscriber

import "hash/maphash"

// heldSet is the reservoir's index of held messages: received and not yet
// acked, nacked, released or expired.
//
// It is a list of slabs in arrival order (one per response the streams
// delivered) rather than a map of every held message. A map entry per
// message, inserted on arrival and deleted when the task hands its lease
// on, was ~5% of a Spark run's CPU (mapassign, mapaccess, hashing;
// bench/harness/analysis.md, issue 12). Callers release, ack and modack in
// the order they took messages, which is arrival order, so a lookup is
// usually one string comparison at a cursor: the entry after the last one
// found, or the oldest held entry. Only a lookup that misses both builds
// (once, then extends) a hash index, so callers that ack out of order
// still get O(1) lookups.
//
// Not safe for concurrent use: the reservoir's mu guards it.
type heldSet struct {
	slabs []*slab // arrival order; a slab leaves when its last entry does
	count int     // live entries

	// cursor: where the next in-order lookup is expected.
	cs, ci int // slab index, entry index

	// index: by hash of the ack id, built on a lookup that misses the
	// cursor and the head, over slabs[:indexed]; nil until then.
	index   map[uint64]*entry
	indexed int
	seed    maphash.Seed
}

// slab is the entries of one add, one allocation.
type slab struct {
	entries []entry
	live    int
}

func newHeldSet() *heldSet { return &heldSet{seed: maphash.MakeSeed()} }

// add holds the entries of s, which are all live.
func (h *heldSet) add(s *slab) {
	s.live = len(s.entries)
	for i := range s.entries {
		s.entries[i].slab, s.entries[i].pos = s, int32(i)
	}
	h.slabs = append(h.slabs, s)
	h.count += s.live
}

// lookup finds a held entry by ack id, or nil.
func (h *heldSet) lookup(id string) *entry {
	if e := h.at(h.cs, h.ci, id); e != nil {
		return e
	}
	if e := h.at(0, 0, id); e != nil { // a new in-order pass starts at the oldest
		return e
	}
	if len(h.slabs) == 0 {
		return nil
	}
	h.extendIndex()
	if e := h.index[maphash.String(h.seed, id)]; e != nil && !e.gone && e.ackID == id {
		h.moveCursorPast(e)
		return e
	}
	return nil
}

// at checks the first live entry at or after (si, ei) against id and, on
// a match, moves the cursor past it.
func (h *heldSet) at(si, ei int, id string) *entry {
	for si < len(h.slabs) {
		s := h.slabs[si]
		for ei < len(s.entries) && s.entries[ei].gone {
			ei++
		}
		if ei < len(s.entries) {
			e := &s.entries[ei]
			if e.ackID != id {
				return nil
			}
			h.cs, h.ci = si, ei+1
			return e
		}
		si, ei = si+1, 0
	}
	return nil
}

// moveCursorPast points the cursor after e (found through the index), so
// an in-order run that starts mid-list continues by comparison.
func (h *heldSet) moveCursorPast(e *entry) {
	for si, s := range h.slabs {
		if s == e.slab {
			h.cs, h.ci = si, int(e.pos)+1
			return
		}
	}
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
// their ack ids) can be freed, and fixes the cursor and the index up.
func (h *heldSet) compact() {
	kept := h.slabs[:0]
	cs, indexed := 0, 0
	for i, s := range h.slabs {
		if s.live == 0 {
			continue
		}
		if i < h.cs {
			cs++
		}
		if i < h.indexed {
			indexed++
		}
		kept = append(kept, s)
	}
	if len(kept) == len(h.slabs) {
		return
	}
	if h.cs < len(h.slabs) && h.slabs[h.cs].live == 0 {
		h.ci = 0 // the cursor's slab left: continue at the start of the next
	}
	clear(h.slabs[len(kept):])
	h.slabs, h.cs, h.indexed = kept, cs, indexed
	if indexed == 0 {
		// Every indexed slab has left: back to lookups by comparison only,
		// with no per-message index work on forget.
		h.index = nil
	}
}
