package subscriber

import (
	"testing"
	"time"
)

func TestSignalWakesCurrentWaitersOnly(t *testing.T) {
	var s signal
	a, b := s.wait(), s.wait()
	s.broadcast()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was not woken")
		}
	}
	later := s.wait()
	select {
	case <-later:
		t.Fatal("a waiter taken after the broadcast was woken by it")
	default:
	}
	s.broadcast()
	select {
	case <-later:
	case <-time.After(5 * time.Second):
		t.Fatal("the later waiter was not woken by the next broadcast")
	}
}
