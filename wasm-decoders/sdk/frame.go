package sdk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Framing of the pg_init config and the pg_decode input. All integers are
// little-endian u32 (docs/decoder-abi.md).

// EncodeConfig builds a pg_init config: the target schema as an Arrow IPC
// schema message (may be empty) and the options (written sorted by key).
func EncodeConfig(schemaIPC []byte, opts map[string]string) []byte {
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

var errConfig = errors.New("malformed pg_init config")

// DecodeConfig splits a pg_init config.
func DecodeConfig(b []byte) (schemaIPC []byte, opts map[string]string, err error) {
	next := func() ([]byte, bool) {
		if len(b) < 4 {
			return nil, false
		}
		n := binary.LittleEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-4) {
			return nil, false
		}
		v := b[4 : 4+n]
		b = b[4+n:]
		return v, true
	}
	schemaIPC, ok := next()
	if !ok || len(b) < 4 {
		return nil, nil, errConfig
	}
	count := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(count) > uint64(len(b)/8) {
		return nil, nil, errConfig
	}
	opts = make(map[string]string, count)
	for i := uint32(0); i < count; i++ {
		k, ok1 := next()
		v, ok2 := next()
		if !ok1 || !ok2 {
			return nil, nil, errConfig
		}
		opts[string(k)] = string(v)
	}
	if len(b) != 0 {
		return nil, nil, fmt.Errorf("%w: %d trailing bytes", errConfig, len(b))
	}
	return schemaIPC, opts, nil
}

// EncodeInput builds a pg_decode input from payloads: the Arrow binary
// layout (count, count+1 offsets, data).
func EncodeInput(payloads [][]byte) []byte {
	size := 8 + 4*len(payloads)
	for _, p := range payloads {
		size += len(p)
	}
	out := make([]byte, 0, size)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(payloads)))
	off := uint32(0)
	out = binary.LittleEndian.AppendUint32(out, 0)
	for _, p := range payloads {
		off += uint32(len(p))
		out = binary.LittleEndian.AppendUint32(out, off)
	}
	for _, p := range payloads {
		out = append(out, p...)
	}
	return out
}

// countPayloads validates an input and returns its payload count.
func countPayloads(in []byte) (int, error) {
	if len(in) < 8 {
		return 0, errors.New("pg_decode input too short")
	}
	n := uint64(binary.LittleEndian.Uint32(in))
	head := 4 + 4*(n+1)
	if head > uint64(len(in)) {
		return 0, fmt.Errorf("pg_decode input: %d offsets do not fit", n+1)
	}
	data := uint64(len(in)) - head
	prev := uint32(0)
	for i := uint64(0); i <= n; i++ {
		o := binary.LittleEndian.Uint32(in[4+4*i:])
		if o < prev || (i == 0 && o != 0) || uint64(o) > data {
			return 0, fmt.Errorf("pg_decode input: bad offset %d at %d", o, i)
		}
		prev = o
	}
	if uint64(prev) != data {
		return 0, fmt.Errorf("pg_decode input: %d data bytes, offsets cover %d", data, prev)
	}
	return int(n), nil
}

// payload returns payload i of a validated input.
func payload(in []byte, i int) []byte {
	n := int(binary.LittleEndian.Uint32(in))
	head := 4 + 4*(n+1)
	lo := binary.LittleEndian.Uint32(in[4+4*i:])
	hi := binary.LittleEndian.Uint32(in[8+4*i:])
	return in[head+int(lo) : head+int(hi) : head+int(hi)]
}
