package wire

import "google.golang.org/protobuf/encoding/protowire"

// Every tag in the messages parsed here is one byte (field numbers under
// 16), and most length prefixes are too (ids, attribute keys and values,
// timestamps). protowire's functions are too large to inline, and at
// ~18 calls per message they were ~1.7% of a Spark run's CPU
// (bench/tools/spark_cpu.py pubsub-go-defaults --perf), so the one-byte cases are
// inlined here and everything else, errors included, goes to protowire.

// consumeTag is protowire.ConsumeTag.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 {
		if c := b[0]; c-8 < 0x80-8 { // 8 <= c < 0x80: one byte, field number not 0
			return protowire.Number(c >> 3), protowire.Type(c & 7), 1
		}
	}
	return protowire.ConsumeTag(b)
}

// consumeBytes is protowire.ConsumeBytes.
func consumeBytes(b []byte) ([]byte, int) {
	if len(b) > 0 {
		if n := int(b[0]) + 1; n <= 0x80 && n <= len(b) {
			return b[1:n], n
		}
	}
	return protowire.ConsumeBytes(b)
}
