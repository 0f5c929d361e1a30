package subscriber

import (
	"context"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// Schema mode decodes lots as soon as they are finished, on a few worker
// goroutines, instead of on the caller's path in Next: a take hands out a
// batch that is already decoded, and the decoding of the next lots overlaps
// the caller's own work (in Spark, the Python task handing the last batch to
// the JVM) and runs on another core. The decoded batch carries the raw
// columns (decoding.apply), so a decoded lot replaces its raw record and
// splits, is handed out and drained exactly like a raw one, with the same
// entries and ack ids.

// decodeAhead bounds how many lots at the head of the reservoir are decoded
// before anyone asks for them: enough to keep the workers busy while the
// caller takes, few enough that a subscriber holding many buffered lots
// does not hold a decoded copy of each (or spend CPU on lots that Close
// nacks).
const decodeAhead = 4

// maxDecodeWorkers bounds the workers; the decoder gets as many instances
// (each with its own memory cap, for a module).
const maxDecodeWorkers = 2

// decodeWorkers is the number of workers for this process: one per core,
// at most maxDecodeWorkers.
func decodeWorkers() int {
	return max(1, min(runtime.GOMAXPROCS(0), maxDecodeWorkers))
}

// Decoding states of a lot; guarded by reservoir.mu.
const (
	lotPending  = iota // finished, waiting for a worker
	lotDecoding        // a worker decodes it
	lotDecoded         // rec is the decoded batch, or err is set
)

// predecode is a lot's decoding (schema mode). The halves of a split lot
// share it: only decoded lots are split.
type predecode struct {
	state int
	// err: the lot failed as a whole (the decoder hit a limit or
	// crashed); rec is still the raw batch, and the lot is handed out
	// whole for Next to nack and report.
	err  error
	done chan struct{} // closed when the state becomes lotDecoded
}

// failed reports whether p's lot failed as a whole; false on nil (raw
// mode).
func (p *predecode) failed() bool {
	return p != nil && p.state == lotDecoded && p.err != nil
}

// batch is the Batch that hands l out, with its decoding.
func (l *lot) batch() *Batch {
	return &Batch{Record: l.rec, AckIDs: l.ids, pre: l.pre}
}

// decodePool decodes the reservoir's lots ahead of take.
type decodePool struct {
	r       *reservoir
	dec     *decoding
	cond    *sync.Cond // on r.mu: a lot was queued or handed out, or stop
	stopped bool       // guarded by r.mu
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// startDecodePool starts workers that decode r's lots with dec; r hands out
// only decoded lots from now on.
func startDecodePool(r *reservoir, dec *decoding, workers int) *decodePool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &decodePool{r: r, dec: dec, cond: sync.NewCond(&r.mu), ctx: ctx, cancel: cancel}
	r.mu.Lock()
	r.pool = p
	for _, l := range r.lots {
		p.added(l)
	}
	r.mu.Unlock()
	for range workers {
		p.wg.Go(p.work)
	}
	return p
}

// added marks a lot just queued as waiting to be decoded; the caller holds
// r.mu. A no-op on nil (raw mode).
func (p *decodePool) added(l *lot) {
	if p == nil {
		return
	}
	if l.pre == nil {
		l.pre = &predecode{done: make(chan struct{})}
	}
	p.cond.Broadcast()
}

// notReady returns a channel to wait on while the head lot l is not
// decoded yet, or nil when it can be handed out; the caller holds r.mu. As
// the head moves on when it is handed out, the workers are woken to decode
// the next lot in the window.
func (p *decodePool) notReady(l *lot) <-chan struct{} {
	if p == nil || l.pre == nil {
		return nil
	}
	if l.pre.state != lotDecoded {
		return l.pre.done
	}
	p.cond.Broadcast()
	return nil
}

// next claims the oldest pending lot within decodeAhead of the head; the
// caller holds r.mu.
func (p *decodePool) next() *lot {
	for _, l := range p.r.lots[:min(len(p.r.lots), decodeAhead)] {
		if l.pre != nil && l.pre.state == lotPending {
			l.pre.state = lotDecoding
			return l
		}
	}
	return nil
}

// work decodes lots until stop.
func (p *decodePool) work() {
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	for !p.stopped {
		l := p.next()
		if l == nil {
			p.cond.Wait()
			continue
		}
		// Retained: Close may drain (release) the lot meanwhile; take never
		// hands out a lot being decoded.
		raw := l.rec
		raw.Retain()
		r.mu.Unlock()
		out, _, err := p.dec.apply(p.ctx, raw)
		r.mu.Lock()
		switch {
		case err != nil:
			l.pre.err = err
		case l.rec != raw: // drained meanwhile
			out.Release()
		default:
			l.rec = out
			raw.Release() // the lot's reference; out holds the raw columns
		}
		raw.Release()
		l.pre.state = lotDecoded
		close(l.pre.done)
	}
}

// stop ends the workers, cancelling the batches being decoded, waits for
// them and wakes every take still waiting for a lot to be decoded (it then
// finds the reservoir closed). Close calls it once the reservoir is
// closed: the lots left are drained and nacked. A no-op on nil.
func (p *decodePool) stop() {
	if p == nil {
		return
	}
	p.r.mu.Lock()
	p.stopped = true
	p.cond.Broadcast()
	p.r.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	for _, l := range p.r.lots {
		if l.pre != nil && l.pre.state != lotDecoded {
			l.pre.state, l.pre.err = lotDecoded, errClosed
			close(l.pre.done)
		}
	}
}

// handOut finishes a batch taken from a decoded lot: a lot that failed as
// a whole is nacked and its error returned (see decodeFailed), otherwise
// its rows that did not decode are counted.
func (s *Subscriber) handOut(b *Batch) (*Batch, error) {
	pre := b.pre
	b.pre = nil
	if pre.err != nil {
		return nil, s.decodeFailed(b, pre.err)
	}
	errs := b.Record.Column(int(b.Record.NumCols()) - 1).(*array.String)
	s.stats.decodeErrors.Add(int64(errs.Len() - errs.NullN()))
	return b, nil
}
