package rpc

import (
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
)

// Kind is the machine-readable reason of a failure, the part of the typed
// error (code, kind, message) the C API returns that a caller branches on
// (as arrow-adbc's AdbcError carries a vendor code and SQLSTATE next to
// its message): callers never need to read the message text. Most kinds
// are the code's canonical name in lower case; the ones below say more.
type Kind string

// Kinds that say more than their code.
const (
	// KindClosed: the handle (subscriber, publisher, decoder) is closed.
	KindClosed Kind = "closed"
	// KindPanic: a Go panic was recovered (a bug in the library).
	KindPanic Kind = "panic"
	// KindDecoderTimeLimit: a decoder ran past decoder.timeout_ms.
	KindDecoderTimeLimit Kind = "decoder_time_limit"
	// KindDecoderMemoryLimit: a decoder hit decoder.memory_limit_mb.
	KindDecoderMemoryLimit Kind = "decoder_memory_limit"
	// KindDecoderCrashed: a decoder module trapped, exited or broke the ABI.
	KindDecoderCrashed Kind = "decoder_crashed"
)

// Kinds lists every kind with the code it comes with; the contract hands
// it to Python, whose errors.py maps each kind to an exception class.
var Kinds = func() map[Kind]codes.Code {
	m := map[Kind]codes.Code{
		KindClosed:             codes.FailedPrecondition,
		KindPanic:              codes.Internal,
		KindDecoderTimeLimit:   codes.DeadlineExceeded,
		KindDecoderMemoryLimit: codes.ResourceExhausted,
		KindDecoderCrashed:     codes.Aborted,
	}
	for c := range CodeNames {
		if c != codes.OK {
			m[codeKind(c)] = c
		}
	}
	return m
}()

func codeKind(c codes.Code) Kind { return Kind(strings.ToLower(CodeName(c))) }

type kindError struct {
	kind Kind
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

// WithKind marks err (keeping its code) with a kind that says more than
// its code; nil stays nil.
func WithKind(kind Kind, err error) error {
	if err == nil {
		return nil
	}
	return &kindError{kind: kind, err: err}
}

// Closed is a FAILED_PRECONDITION error of kind "closed".
func Closed(format string, args ...any) error {
	return WithKind(KindClosed, Errorf(codes.FailedPrecondition, format, args...))
}

// KindOf is the kind err was marked with, else the one of its code.
func KindOf(err error) Kind {
	var k *kindError
	if errors.As(err, &k) {
		return k.kind
	}
	return codeKind(Code(err))
}
