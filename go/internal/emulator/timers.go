package emulator

import (
	"container/heap"
	"time"
)

// timerKind says what happens when a timer fires: a lease runs out (the
// message is redelivered), or a retry-policy backoff ends (it is ready).
type timerKind uint8

const (
	leaseEnds timerKind = iota
	backoffEnds
)

// timer is one pending deadline. Timers are not removed when a lease is
// extended or acked: a timer whose entry moved on (another delivery, or a
// later deadline) is stale and skipped when it fires.
type timer struct {
	at   time.Time
	e    *entry
	gen  uint32
	kind timerKind
}

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

func (h *timerHeap) push(t timer) { heap.Push(h, t) }
func (h *timerHeap) pop() timer   { return heap.Pop(h).(timer) }
