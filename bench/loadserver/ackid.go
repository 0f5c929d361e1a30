package main

import (
	"math/bits"
	"strconv"
	"strings"
)

// An ack id is "<lease>-<seq>" in base 36: the lease that delivered the
// message (one per stream, plus one per subscription for unary Pull) and the
// delivery's sequence number within it. Acking therefore needs no
// per-message map: the lease finds the delivery by arithmetic.

// appendAckID appends the ack id of delivery seq of lease to b.
func appendAckID(b []byte, lease, seq uint64) []byte {
	b = strconv.AppendUint(b, lease, 36)
	b = append(b, '-')
	return strconv.AppendUint(b, seq, 36)
}

// parseAckID is the inverse of appendAckID; ok is false for ids this
// server did not issue. It runs for every ack and modack, so it is a plain
// loop rather than strings.Cut and strconv.ParseUint.
func parseAckID(id string) (lease, seq uint64, ok bool) {
	i := strings.IndexByte(id, '-')
	if i < 0 {
		return 0, 0, false
	}
	if lease, ok = parseBase36(id[:i]); !ok {
		return 0, 0, false
	}
	if seq, ok = parseBase36(id[i+1:]); !ok {
		return 0, 0, false
	}
	return lease, seq, true
}

// parseBase36 parses what strconv.AppendUint(_, _, 36) writes: a non-empty
// run of [0-9a-z] that fits in 64 bits.
func parseBase36(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'z':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		hi, lo := bits.Mul64(n, 36)
		var carry uint64
		n, carry = bits.Add64(lo, d, 0)
		if hi != 0 || carry != 0 {
			return 0, false
		}
	}
	return n, true
}
