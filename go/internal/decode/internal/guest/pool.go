package guest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/abi"
)

// Setup is what a Pool runs.
type Setup struct {
	Name      string        // the decoder in messages
	Module    engine.Module // compiled by the decoder's engine
	Configs   Configs
	Target    *arrow.Schema // the target schema; nil: the module's own
	Limit     uint64        // memory cap of an instance in bytes
	Timeout   time.Duration // bounds one batch
	Instances int           // bound on live instances not pinned
	Alloc     memory.Allocator
}

// Pool is a decoder's module instances. It is safe for concurrent use:
// each Decode borrows an instance, started when none is idle and the
// bound allows.
type Pool struct {
	s       Setup
	schemas abi.Schemas

	idle  chan *instance
	slots chan struct{} // one token per live instance not pinned
	pins  chan struct{} // one token per pinned instance (pin.go)
	mu    sync.Mutex
	done  bool
}

// Open starts one instance and decodes an empty batch with it, to learn
// the output schema (Schemas).
func Open(ctx context.Context, s Setup) (*Pool, error) {
	p := &Pool{s: s, idle: make(chan *instance, s.Instances), slots: make(chan struct{}, s.Instances),
		pins: make(chan struct{}, MaxPinned)}
	probe := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	empty := probe.NewBinaryArray()
	probe.Release()
	defer empty.Release()
	rec, errs, err := p.decode(ctx, empty, true)
	if err != nil {
		p.Close()
		return nil, err
	}
	rec.Release()
	errs.Release()
	return p, nil
}

// Schemas are the output schemas, learned by Open.
func (p *Pool) Schemas() abi.Schemas { return p.schemas }

// Decode decodes one batch with one pg_decode call.
func (p *Pool) Decode(ctx context.Context, payloads *array.Binary) (arrow.RecordBatch, *array.String, error) {
	return p.decode(ctx, payloads, false)
}

func (p *Pool) decode(ctx context.Context, payloads *array.Binary, first bool) (arrow.RecordBatch, *array.String, error) {
	in, err := p.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.s.Timeout)
	defer cancel()
	out, err := in.call(ctx, "pg_decode", inputSize(payloads), func(b []byte) { fillInput(b, payloads) })
	if err != nil {
		p.drop(in, err)
		return nil, nil, fmt.Errorf("decode: %s decoder: %w", p.s.Name, err)
	}
	var rec arrow.RecordBatch
	var errs *array.String
	var pn *pin
	pinned := false
	if in.abi == abiVersion2 {
		if pn = p.tryPin(in); pn != nil {
			defer pn.parent.Release() // the batch's buffers hold their own references
		}
		rec, errs, pinned, err = p.readV2(in, out, first, pn)
	} else {
		rec, errs, err = p.readV1(out)
	}
	switch {
	case err != nil:
		p.drop(in, engine.ErrCrashed)
		return nil, nil, fmt.Errorf("decode: %s decoder: %w", p.s.Name, err)
	case pinned:
		p.keep(pn, in)
	default:
		p.put(in)
	}
	if rec.NumRows() != int64(payloads.Len()) {
		rec.Release()
		errs.Release()
		return nil, nil, fmt.Errorf("decode: %s decoder: %w: %d rows for %d payloads", p.s.Name, engine.ErrCrashed, rec.NumRows(), payloads.Len())
	}
	return rec, errs, nil
}

// readV1 reads an ABI 1 output (Arrow IPC).
func (p *Pool) readV1(out []byte) (arrow.RecordBatch, *array.String, error) {
	full, err := abi.ReadIPC(out, p.s.Alloc, &p.schemas)
	if err != nil {
		return nil, nil, err
	}
	defer full.Release()
	rec, errs := p.schemas.Split(full.Columns(), full.NumRows())
	return rec, errs, nil
}

// readV2 reads an ABI 2 output layout. The schema is the target, or the
// module's pg_schema when none was given.
func (p *Pool) readV2(in *instance, out []byte, first bool, pn *pin) (arrow.RecordBatch, *array.String, bool, error) {
	if first {
		sc := p.s.Target
		if sc == nil {
			fields, err := abi.DecodeFields(in.schema)
			if err != nil {
				return nil, nil, false, fmt.Errorf("%w: pg_schema: %v", engine.ErrCrashed, err)
			}
			sc = arrow.NewSchema(fields, nil)
		}
		md := sc.Metadata()
		p.schemas = abi.Schemas{Decoded: sc, Full: arrow.NewSchema(append(append([]arrow.Field(nil), sc.Fields()...),
			arrow.Field{Name: abi.ErrorColumn, Type: arrow.BinaryTypes.String, Nullable: true}), &md)}
	}
	var guest *memory.Buffer
	if pn != nil {
		guest = pn.parent
	}
	cols, rows, pinned, err := abi.ReadLayout(out, in.mem, p.schemas.Full, p.s.Alloc, guest)
	if err != nil {
		return nil, nil, false, err
	}
	rec, errs := p.schemas.Split(cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	return rec, errs, pinned, nil
}

// get borrows an idle instance or starts a new one when under the bound.
func (p *Pool) get(ctx context.Context) (*instance, error) {
	for {
		p.mu.Lock()
		closed := p.done
		p.mu.Unlock()
		if closed {
			return nil, engine.ErrClosed
		}
		select {
		case in := <-p.idle:
			return in, nil
		default:
		}
		select {
		case in := <-p.idle:
			return in, nil
		case p.slots <- struct{}{}:
			ictx, cancel := context.WithTimeout(ctx, p.s.Timeout)
			in, err := newInstance(ictx, p.s.Module, &p.s.Configs, p.s.Limit)
			cancel()
			if err != nil {
				<-p.slots
				return nil, fmt.Errorf("decode: %s decoder: %w", p.s.Name, err)
			}
			return in, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (p *Pool) put(in *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		in.close()
		<-p.slots
		return
	}
	p.idle <- in
}

// drop keeps an instance that failed cleanly (ErrDecoder) and discards
// one that trapped, timed out or ran out of memory.
func (p *Pool) drop(in *instance, err error) {
	if isClean(err) {
		p.put(in)
		return
	}
	in.close()
	<-p.slots
}

// Close closes idle instances now and busy ones when their batch ends.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	for {
		select {
		case in := <-p.idle:
			in.close()
			<-p.slots
		default:
			return
		}
	}
}

// Module is the compiled module the pool runs.
func (p *Pool) Module() engine.Module { return p.s.Module }

// Counts are the pins taken, the idle instances and the slots taken (of
// the live instances not pinned), for tests.
func (p *Pool) Counts() (pins, idle, slots int) { return len(p.pins), len(p.idle), len(p.slots) }
