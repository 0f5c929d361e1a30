package subscriber

import (
	"testing"

	"google.golang.org/grpc/mem"
)

// countingPool records buffers returned to it.
type countingPool struct{ put int }

func (p *countingPool) Get(n int) *[]byte { b := make([]byte, n); return &b }

func (p *countingPool) Put(*[]byte) { p.put++ }

// A response's frames stay out of gRPC's pool (their views valid) after
// gRPC frees its reference on return from Unmarshal, until release.
func TestRawResponseHoldsFramesUntilRelease(t *testing.T) {
	pool := &countingPool{}
	var data mem.BufferSlice
	// Frames of 4 KiB: gRPC pools nothing under 1 KiB.
	for _, s := range []string{"first frame,", "second frame"} {
		b := pool.Get(4096)
		*b = append((*b)[:0], s...)
		data = append(data, mem.NewBuffer(b, pool))
	}
	var raw rawResponse
	if err := (pullCodec{}).Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	data.Free() // what gRPC does once Unmarshal returns
	if pool.put != 0 {
		t.Fatalf("%d frames went back to the pool while the response is held", pool.put)
	}
	if len(raw.segs) != 2 || string(raw.segs[0])+string(raw.segs[1]) != "first frame,second frame" {
		t.Fatalf("segments %q", raw.segs)
	}
	raw.release()
	if pool.put != 2 || len(raw.segs) != 0 {
		t.Fatalf("after release: %d of 2 frames back in the pool, %d segments left", pool.put, len(raw.segs))
	}
	raw.release() // idempotent: the stream's deferred release after a loop's
	if pool.put != 2 {
		t.Fatalf("a second release returned frames again (%d)", pool.put)
	}
}
