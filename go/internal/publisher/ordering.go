package publisher

import "sync"

// sequencer keeps per-key order: at most one request per ordering key is
// in flight, the next one starts only after the previous succeeded, and a
// failure pauses the key so that no later message of it overtakes the
// failed ones: they all fail with the key's error. Unkeyed bundles pass
// straight through. Pauses last for the life of the Publisher.
type sequencer struct {
	send func(*bundle)        // starts sending a bundle
	fail func(*bundle, error) // completes a bundle without sending it

	mu   sync.Mutex
	keys map[string]*keyState
}

type keyState struct {
	busy   bool
	queue  []*bundle
	paused error
}

func newSequencer(send func(*bundle), fail func(*bundle, error)) *sequencer {
	return &sequencer{send: send, fail: fail, keys: map[string]*keyState{}}
}

// submit schedules a closed bundle.
func (s *sequencer) submit(b *bundle) {
	if b.key == "" {
		s.send(b)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys[b.key]
	if ks == nil {
		ks = &keyState{}
		s.keys[b.key] = ks
	}
	switch {
	case ks.paused != nil:
		s.fail(b, ks.paused)
	case ks.busy:
		ks.queue = append(ks.queue, b)
	default:
		ks.busy = true
		s.send(b)
	}
}

// done records the outcome of a sent bundle and starts the next one of
// its key, or fails the key's queue if err is not nil.
func (s *sequencer) done(b *bundle, err error) {
	if b.key == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys[b.key]
	ks.busy = false
	if err != nil {
		ks.paused = err
		for _, q := range ks.queue {
			s.fail(q, err)
		}
		ks.queue = nil
		return
	}
	if len(ks.queue) == 0 {
		delete(s.keys, b.key) // keep the map as small as the keys in use
		return
	}
	next := ks.queue[0]
	ks.queue[0] = nil
	ks.queue = ks.queue[1:]
	ks.busy = true
	s.send(next)
}
