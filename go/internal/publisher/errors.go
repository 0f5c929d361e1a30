package publisher

import (
	"context"
	"errors"

	"github.com/pubsub-go/pubsub-go/go/internal/conn"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// codeNames are the canonical (google.rpc.Code) names users see in docs
// and the console; codes.Code.String gives Go's CamelCase instead.
var codeNames = map[codes.Code]string{
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

func codeName(c codes.Code) string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return c.String()
}

// detail is the server's message of err without gRPC's "rpc error:" frame.
func detail(err error) string {
	var coded interface{ GRPCStatus() *status.Status }
	if errors.As(err, &coded) {
		return coded.GRPCStatus().Message()
	}
	return err.Error()
}

// describe rewraps err as a status error with the same code whose text
// reads "<what>: CODE_NAME: server message<suffix>".
func describe(err error, what, suffix string) error {
	c := conn.Code(err)
	return status.Errorf(c, "%s: %s: %s%s", what, codeName(c), detail(err), suffix)
}

// ctxError turns a context error into a status error keeping its code.
func ctxError(err error, what string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Errorf(codes.DeadlineExceeded, "%s: DEADLINE_EXCEEDED: %v", what, err)
	}
	return status.Errorf(codes.Canceled, "%s: CANCELLED: %v", what, err)
}

var errClosed = status.Error(codes.FailedPrecondition, "publisher is closed")
