package decode

import "github.com/pubsub-go/pubsub-go/go/internal/decode/native"

// IsBuiltin reports whether format names a built-in decoder.
func IsBuiltin(format string) bool { return native.IsBuiltin(format) }

// Builtins are the built-in formats, sorted (cmd/contract hands them to
// Python).
func Builtins() []string { return native.Builtins() }
