// Package ipccheck reads a decoder's output with arrow-go, for tests of
// the guest packages: it proves the hand-written IPC is standard Arrow.
package ipccheck

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Read parses a one-batch IPC stream and renders every value (which
// fails on inconsistent offsets or lengths). The caller releases the batch.
func Read(out []byte) (rec arrow.RecordBatch, err error) {
	r, err := ipc.NewReader(bytes.NewReader(out), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	if !r.Next() {
		return nil, fmt.Errorf("no record batch: %v", r.Err())
	}
	rec = r.RecordBatch()
	rec.Retain()
	defer func() {
		if p := recover(); p != nil {
			rec.Release()
			rec, err = nil, fmt.Errorf("invalid batch: %v", p)
		}
	}()
	for _, c := range rec.Columns() {
		_ = c.String()
	}
	return rec, nil
}
