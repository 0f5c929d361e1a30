package arrowlite

import (
	"encoding/binary"
	"fmt"
)

// BatchWriter writes one record batch as a complete Arrow IPC stream
// (schema message, record batch message, end-of-stream marker). It keeps
// its buffers between calls to avoid garbage per batch.
type BatchWriter struct {
	out     []byte
	body    []byte
	nodes   fbStructs16
	buffers fbStructs16
}

// Write encodes rows slots of cols (one builder per schema field) and
// returns the stream. The result is valid until the next Write.
func (w *BatchWriter) Write(s *Schema, cols []*Builder, rows int) ([]byte, error) {
	if len(cols) != len(s.Fields) {
		return nil, fmt.Errorf("arrowlite: %d columns for %d fields", len(cols), len(s.Fields))
	}
	w.body, w.nodes, w.buffers = w.body[:0], w.nodes[:0], w.buffers[:0]
	for i, c := range cols {
		if c.n != rows {
			return nil, fmt.Errorf("arrowlite: column %q has %d rows, want %d", s.Fields[i].Name, c.n, rows)
		}
		if err := w.column(c); err != nil {
			return nil, fmt.Errorf("arrowlite: column %q: %w", s.Fields[i].Name, err)
		}
	}
	batch := fbTableObj{fbI64(int64(rows)), fbRef(w.nodes), fbRef(w.buffers)}
	msg := fbTableObj{fbI16(metadataV5), fbU8(headerBatch), fbRef(batch), fbI64(int64(len(w.body)))}
	w.out = AppendSchemaMessage(w.out[:0], s)
	w.out = appendMessage(w.out, msg, w.body)
	w.out = AppendEOS(w.out)
	return w.out, nil
}

func (w *BatchWriter) buffer(b []byte) {
	w.buffers = append(w.buffers, [2]int64{int64(len(w.body)), int64(len(b))})
	w.body = append(w.body, b...)
	for len(w.body)%8 != 0 {
		w.body = append(w.body, 0)
	}
}

func (w *BatchWriter) offsets(starts []int32, end int) {
	at := len(w.body)
	for _, o := range starts {
		w.body = binary.LittleEndian.AppendUint32(w.body, uint32(o))
	}
	w.body = binary.LittleEndian.AppendUint32(w.body, uint32(end))
	w.buffers = append(w.buffers, [2]int64{int64(at), int64(len(w.body) - at)})
	for len(w.body)%8 != 0 {
		w.body = append(w.body, 0)
	}
}

func (w *BatchWriter) column(b *Builder) error {
	w.nodes = append(w.nodes, [2]int64{int64(b.n), int64(b.nulls)})
	if b.Type.ID == Null {
		// The Null type has no buffers in IPC, not even a validity bitmap.
		w.nodes[len(w.nodes)-1][1] = int64(b.n)
		return nil
	}
	if b.nulls == 0 {
		w.buffer(nil)
	} else {
		w.buffer(b.valid)
	}
	switch b.Type.ID {
	case Bool:
		w.buffer(b.data)
	case Utf8, Binary:
		if len(b.data) > 1<<31-1 {
			return fmt.Errorf("more than 2 GiB of data")
		}
		w.offsets(b.offs, len(b.data))
	case List, Map:
		w.offsets(b.offs, b.Children[0].n)
	case Struct:
	default:
		w.buffer(b.data)
	}
	if b.Type.ID == Utf8 || b.Type.ID == Binary {
		w.buffer(b.data)
	}
	for _, c := range b.Children {
		if err := w.column(c); err != nil {
			return err
		}
	}
	return nil
}
