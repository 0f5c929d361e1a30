package decode

import (
	"encoding/binary"
	"errors"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// encodeConfig frames the pg_init config: u32 length + IPC schema, u32
// option count, then u32 length + bytes for each key and value.
func encodeConfig(schemaIPC []byte, opts map[string]string) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(schemaIPC)))
	out = append(out, schemaIPC...)
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(keys)))
	for _, k := range keys {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(k)))
		out = append(out, k...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(opts[k])))
		out = append(out, opts[k]...)
	}
	return out
}

// inputSize is the size of the pg_decode input for payloads: u32 count,
// count+1 u32 offsets, then the bytes (null payloads count as empty).
func inputSize(p *array.Binary) int {
	n := p.Len()
	size := 4 + 4*(n+1)
	if p.NullN() == 0 {
		return size + len(p.ValueBytes())
	}
	for i := 0; i < n; i++ {
		if p.IsValid(i) {
			size += len(p.Value(i))
		}
	}
	return size
}

// fillInput writes the pg_decode input into b (len(b) == inputSize(p)).
func fillInput(b []byte, p *array.Binary) {
	n := p.Len()
	binary.LittleEndian.PutUint32(b, uint32(n))
	offs := b[4 : 4+4*(n+1)]
	data := b[4+4*(n+1):]
	if p.NullN() == 0 {
		vo := p.ValueOffsets()
		base := vo[0]
		for i, o := range vo {
			binary.LittleEndian.PutUint32(offs[4*i:], uint32(o-base))
		}
		copy(data, p.ValueBytes())
		return
	}
	at := 0
	binary.LittleEndian.PutUint32(offs, 0)
	for i := 0; i < n; i++ {
		if p.IsValid(i) {
			at += copy(data[at:], p.Value(i))
		}
		binary.LittleEndian.PutUint32(offs[4*(i+1):], uint32(at))
	}
}

// isClean reports errors after which the instance is still sound.
func isClean(err error) bool {
	return errors.Is(err, ErrDecoder) && !errors.Is(err, ErrCrashed)
}
