package emulator

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// memoryCapEnv names the environment variable that sets how many bytes of
// messages (data, attributes and ordering keys) the emulator holds at most
// across all subscriptions and snapshots; defaultMemoryCap applies without it.
const (
	memoryCapEnv     = "PUBSUB_GO_EMULATOR_MAX_BYTES"
	defaultMemoryCap = 4 << 30
)

func memoryCapFromEnv() (int64, error) {
	v := os.Getenv(memoryCapEnv)
	if v == "" {
		return defaultMemoryCap, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: expected a positive number of bytes, e.g. %d", memoryCapEnv, v, int64(defaultMemoryCap))
	}
	return n, nil
}

// memory counts the bytes of messages held. A message is counted once
// however many subscriptions hold it (message.release).
type memory struct {
	held atomic.Int64
	cap  int64
}

// reserve admits n more bytes or refuses with RESOURCE_EXHAUSTED naming the cap.
func (m *memory) reserve(n int64) error {
	if h := m.held.Add(n); h > m.cap {
		m.held.Add(-n)
		return status.Errorf(codes.ResourceExhausted,
			"embedded emulator: publishing %d bytes would hold %d bytes of undelivered or retained messages, over its cap of %d "+
				"(ack messages or delete subscriptions to free space, or raise %s)", n, h, m.cap, memoryCapEnv)
	}
	return nil
}

func (m *memory) free(n int64) { m.held.Add(-n) }
