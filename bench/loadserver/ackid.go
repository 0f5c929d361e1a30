package main

import (
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
// server did not issue.
func parseAckID(id string) (lease, seq uint64, ok bool) {
	l, s, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	lease, err := strconv.ParseUint(l, 36, 64)
	if err != nil {
		return 0, 0, false
	}
	seq, err = strconv.ParseUint(s, 36, 64)
	if err != nil {
		return 0, 0, false
	}
	return lease, seq, true
}
