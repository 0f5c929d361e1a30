package abi

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
)

// ErrorColumn is the utf8 column every module appends to its output: null
// for a decoded row, the error message for a rejected one.
const ErrorColumn = "__error"

// Schemas are a decoder's output schemas: Full as the module writes it,
// Decoded without its last column, ErrorColumn.
type Schemas struct{ Decoded, Full *arrow.Schema }

// Split is a full batch as its decoded columns and its ErrorColumn; the
// caller releases rec.
func (s *Schemas) Split(full []arrow.Array, rows int64) (arrow.RecordBatch, *array.String) {
	n := len(full) - 1
	rec := array.NewRecordBatch(s.Decoded, full[:n], rows)
	errs := full[n].(*array.String)
	errs.Retain()
	return rec, errs
}

// ReadIPC parses an ABI 1 output (an Arrow IPC stream of one batch) and
// validates it fully (the module is not trusted). Every buffer is copied
// into alloc: nothing aliases module memory, which the next call reuses.
// A zero s is the first batch, which sets s; later batches must have
// s.Full. The caller releases the returned batch, of schema s.Full.
func ReadIPC(out []byte, alloc memory.Allocator, s *Schemas) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(out), ipc.WithAllocator(alloc))
	if err != nil {
		return nil, fmt.Errorf("%w: unreadable output: %v", engine.ErrCrashed, err)
	}
	defer r.Release()
	if !r.Next() {
		return nil, fmt.Errorf("%w: output has no record batch: %v", engine.ErrCrashed, r.Err())
	}
	full := r.RecordBatch()
	sc := full.Schema()
	n := int(full.NumCols()) - 1
	if n < 0 || sc.Field(n).Name != ErrorColumn || sc.Field(n).Type.ID() != arrow.STRING {
		return nil, fmt.Errorf("%w: output lacks the utf8 %s column", engine.ErrCrashed, ErrorColumn)
	}
	if s.Full == nil {
		md := sc.Metadata()
		s.Full = sc
		s.Decoded = arrow.NewSchema(sc.Fields()[:n], &md)
	} else if !sc.Equal(s.Full) {
		return nil, fmt.Errorf("%w: output schema changed to %s", engine.ErrCrashed, sc)
	}
	for i, c := range full.Columns() {
		if c.DataType().ID() == arrow.NULL {
			continue // nothing to check (and IPC gives it no buffers, which ValidateFull rejects)
		}
		if err := validate(c); err != nil {
			return nil, fmt.Errorf("%w: output column %q: %v", engine.ErrCrashed, sc.Field(i).Name, err)
		}
	}
	full.Retain()
	return full, nil
}

// validate checks a module's output array fully (offsets, UTF-8): it is
// not trusted. arrow-go panics on some bad offsets instead of returning an
// error; that is an error here too.
func validate(a arrow.Array) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid: %v", r)
		}
	}()
	return array.ValidateFull(a)
}
