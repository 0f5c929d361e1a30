package emulator

import (
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// message is one published message, shared (read only) by every
// subscription and snapshot that holds it; its bytes count against the
// memory cap until the last holder lets go.
type message struct {
	pb   *pubsubpb.PubsubMessage
	pub  time.Time
	size int64
	refs atomic.Int32
	mem  *memory
}

func (m *message) release() {
	if m.refs.Add(-1) == 0 {
		m.mem.free(m.size)
	}
}

func messageSize(m *pubsubpb.PubsubMessage) int64 {
	n := len(m.Data) + len(m.OrderingKey)
	for k, v := range m.Attributes {
		n += len(k) + len(v)
	}
	return int64(n)
}

// topic is a topic and where its messages go.
type topic struct {
	pb        *pubsubpb.Topic
	subs      map[string]*subscription
	snapshots map[string]*snapshot
}

// state is everything the emulator holds. mu guards the maps; a publish
// holds it for reading while it fans out, so that admin changes (a new
// subscription, a snapshot) see a publish entirely or not at all.
type state struct {
	mu        sync.RWMutex
	topics    map[string]*topic
	subs      map[string]*subscription
	snapshots map[string]*snapshot
	schemas   map[string]*schemaRevisions
	mem       memory
	policies  policies // IAM (iam.go)
	msgIDs    atomic.Uint64
	subIDs    atomic.Uint64
}

func newState(maxBytes int64) *state {
	return &state{
		topics:    map[string]*topic{},
		subs:      map[string]*subscription{},
		snapshots: map[string]*snapshot{},
		schemas:   map[string]*schemaRevisions{},
		mem:       memory{cap: maxBytes},
	}
}

func (st *state) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, s := range st.subs {
		s.delete()
	}
	st.subs = map[string]*subscription{}
}
