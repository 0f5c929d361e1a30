// Package engine is what a Decoder (go/internal/decode) and the engines
// that run its decoders share: the errors a batch fails with. It sits
// below both, so that an engine's package need not import the Decoder's.
package engine

import "errors"

// Errors of a failed batch or a failed NewDecoder, matched with errors.Is.
// A batch that fails with ErrTimeLimit, ErrMemoryLimit or ErrCrashed has
// had its module instance discarded; the next batch runs on a fresh one.
var (
	// ErrTimeLimit: the module ran longer than its time limit.
	ErrTimeLimit = errors.New("decoder exceeded its time limit")
	// ErrMemoryLimit: the module hit its memory cap.
	ErrMemoryLimit = errors.New("decoder exceeded its memory limit")
	// ErrCrashed: the module trapped, exited or broke the ABI.
	ErrCrashed = errors.New("decoder module crashed")
	// ErrDecoder: the module rejected its config or input with a message
	// (e.g. an unsupported schema); its instance stays usable.
	ErrDecoder = errors.New("decoder error")
	// ErrClosed: the decoder was closed.
	ErrClosed = errors.New("decoder is closed")
)
