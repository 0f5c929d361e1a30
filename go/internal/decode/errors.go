package decode

import "github.com/pubsub-go/pubsub-go/go/internal/decode/engine"

// Errors of a failed batch or a failed NewDecoder, matched with errors.Is
// (the same values as the engines', go/internal/decode/engine). A batch
// that fails with ErrTimeLimit, ErrMemoryLimit or ErrCrashed has had its
// module instance discarded; the next batch runs on a fresh one.
var (
	ErrTimeLimit   = engine.ErrTimeLimit   // the module ran longer than DecoderConfig.TimeoutMs
	ErrMemoryLimit = engine.ErrMemoryLimit // the module hit DecoderConfig.MemoryLimitMB
	ErrCrashed     = engine.ErrCrashed     // the module trapped, exited or broke the ABI
	ErrDecoder     = engine.ErrDecoder     // the module rejected its config or input; its instance stays usable
	ErrClosed      = engine.ErrClosed      // the decoder was closed
)
