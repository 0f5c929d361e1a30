package abi

import (
	"math/rand/v2"
	"testing"
)

// TestScansAgreeWithTheGoLoops: ordered and ascii (in C where the build
// has cgo) say what orderedGo and asciiGo say, on sizes around the C
// cut-over and the vector widths, with the one bad element anywhere.
func TestScansAgreeWithTheGoLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 1))
	for _, n := range []int{1, 2, 3, 7, 31, 127, 128, 129, 500, 511, 512, 513, 4097, 70001} {
		for trial := 0; trial < 20; trial++ {
			o := make([]int32, n)
			for i := 1; i < n; i++ {
				o[i] = o[i-1] + int32(r.IntN(3))
			}
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.IntN(0x80))
			}
			if trial > 0 { // one bad element, anywhere
				at := r.IntN(n)
				if at > 0 {
					o[at] = o[at-1] - 1 - int32(r.IntN(5))
				}
				b[at] |= 0x80
			}
			if got, want := ordered(o), orderedGo(o); got != want {
				t.Fatalf("n=%d trial %d: ordered %v, orderedGo %v", n, trial, got, want)
			}
			if got, want := ascii(b), asciiGo(b); got != want || (trial > 0) == got {
				t.Fatalf("n=%d trial %d: ascii %v, asciiGo %v", n, trial, got, want)
			}
		}
	}
}
