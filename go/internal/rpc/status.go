// Package rpc is what the subscriber, the publisher, the acker and the C
// API share about RPC failures: the status code of an error, whether it is
// worth retrying, its machine-readable kind (the typed reason that crosses
// the C boundary), and the backoff and retry loops.
package rpc

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Code is the gRPC code of err (codes.OK for nil, codes.Unknown for a
// non-status error, DeadlineExceeded/Canceled for context errors).
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return codes.DeadlineExceeded
	}
	if errors.Is(err, context.Canceled) {
		return codes.Canceled
	}
	var coded interface{ GRPCStatus() *status.Status }
	if errors.As(err, &coded) {
		return coded.GRPCStatus().Code()
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Unknown
}

// Retryable reports whether err is transient: worth retrying with backoff.
func Retryable(err error) bool {
	switch Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted,
		codes.Aborted, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

// Errorf is a status error with the given code; Code sees it through any
// wrapping.
func Errorf(code codes.Code, format string, args ...any) error {
	return status.Error(code, fmt.Sprintf(format, args...))
}

// CodeNames are the canonical (google.rpc.Code) names users see in docs
// and the console; codes.Code.String gives Go's CamelCase instead. This is
// the one table of them: the contract (contract.go) hands it to Python.
var CodeNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// CodeName is the canonical name of c.
func CodeName(c codes.Code) string {
	if n, ok := CodeNames[c]; ok {
		return n
	}
	return c.String()
}

// Detail is the message of err without gRPC's "rpc error: code = ... desc ="
// frame, which would repeat the code the error already carries.
func Detail(err error) string {
	var coded interface{ GRPCStatus() *status.Status }
	if errors.As(err, &coded) {
		return coded.GRPCStatus().Message()
	}
	return err.Error()
}

// Describe rewraps err as a status error with the same code (and kind)
// whose text reads "<what>: server message<suffix>". The code name is not
// written into the text: the C API puts it in front once.
func Describe(err error, what, suffix string) error {
	return WithKind(KindOf(err), status.Errorf(Code(err), "%s: %s%s", what, Detail(err), suffix))
}

// CtxError turns a context error into a status error keeping its code.
func CtxError(err error, what string) error {
	return status.Errorf(Code(err), "%s: %v", what, err)
}
