package abi

import "encoding/binary"

// Scans over a module's output that load runs on every string column:
// ordered (its offsets) and ascii (its values, before any UTF-8
// decoding). scan_c.go runs them in C, and these Go versions on small
// inputs; they are also the C ones' reference in scan_test.go.

// orderedGo reports whether o is non-decreasing.
func orderedGo(o []int32) bool {
	for i := 1; i < len(o); i++ {
		if o[i] < o[i-1] {
			return false
		}
	}
	return true
}

// asciiGo reports whether b holds only ASCII bytes, testing 32 at a time.
func asciiGo(b []byte) bool {
	var acc uint64
	for ; len(b) >= 32; b = b[32:] {
		acc |= binary.LittleEndian.Uint64(b) | binary.LittleEndian.Uint64(b[8:]) |
			binary.LittleEndian.Uint64(b[16:]) | binary.LittleEndian.Uint64(b[24:])
	}
	for _, c := range b {
		acc |= uint64(c)
	}
	return acc&0x8080808080808080 == 0
}
