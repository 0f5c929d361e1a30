package emulator

import "time"

// timerKind says what happens when a timer fires: a lease runs out (the
// message is redelivered), or a retry-policy backoff ends (it is ready).
type timerKind uint8

const (
	leaseEnds timerKind = iota
	backoffEnds
)

// timer is one deadline shared by the messages of one response (or one
// modack request): one heap item per batch, not per message. Timers are not
// removed when a lease is extended or acked: an entry that moved on
// (another delivery, or a later deadline) is skipped when its timer fires.
type timer struct {
	at   time.Time
	kind timerKind
	due  []due
}

// due is an entry as it was when the timer was set.
type due struct {
	e   *entry
	gen uint32
}

// timerHeap is a min-heap by deadline, written out rather than through
// container/heap, which boxes every timer pushed.
type timerHeap []timer

func (h *timerHeap) push(t timer) {
	*h = append(*h, t)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !a[i].at.Before(a[p].at) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *timerHeap) pop() timer {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = timer{}
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].at.Before(a[m].at) {
			m = l
		}
		if r < n && a[r].at.Before(a[m].at) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
