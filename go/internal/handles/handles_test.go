package handles

import (
	"sync"
	"testing"
)

func TestPutGetTake(t *testing.T) {
	var r Registry[string]
	h := r.Put("a")
	if h == 0 {
		t.Fatal("handle 0 is reserved for 'no handle'")
	}
	if v, ok := r.Get(h); !ok || v != "a" {
		t.Fatalf("Get(%d) = %q, %v", h, v, ok)
	}
	if v, ok := r.Take(h); !ok || v != "a" {
		t.Fatalf("Take(%d) = %q, %v", h, v, ok)
	}
	if _, ok := r.Get(h); ok {
		t.Fatal("handle still live after Take")
	}
	if _, ok := r.Take(h); ok {
		t.Fatal("second Take succeeded")
	}
}

func TestConcurrentTakeHasOneWinner(t *testing.T) {
	var r Registry[int]
	h := r.Put(7)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok := r.Take(h); ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d winners, want 1", wins)
	}
	if r.Len() != 0 {
		t.Fatalf("Len = %d, want 0", r.Len())
	}
}
