package wire

import "encoding/binary"

// Proto3 strings must be valid UTF-8, so the parser checks every id,
// attribute key and value, about four strings per message. They are
// mostly 8 to 16 bytes of ASCII, for which utf8.Valid's call and setup were
// most of its cost, ~1.2% of a Spark run's CPU (bench/tools/spark_cpu.py
// pubsub-go-defaults --perf). shortASCII answers those with two
// overlapping 8-byte loads and is inlined; Go does not inline a function
// that calls utf8.Valid, so call sites check shortASCII(b) || utf8.Valid(b).

// shortASCII reports whether b is 8 to 16 bytes of ASCII (so valid UTF-8);
// false says nothing.
func shortASCII(b []byte) bool {
	return uint(len(b)-8) <= 8 && (le64(b, 0)|le64(b, len(b)-8))&0x8080808080808080 == 0
}

// le64 is the little-endian word at b[i:i+8], which must be in range.
func le64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i : i+8]) }
