package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"unsafe"

	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// codeNames are the canonical upper-case gRPC code names users search for.
var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
	codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
	codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
	codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
	codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
	codes.Unauthenticated: "UNAUTHENTICATED",
}

// guard runs f, turning its error or a panic into a status code and a
// malloc'd message in *errOut. It is the only way exported calls run Go code.
func guard(errOut **C.char, f func() error) (rc C.int) {
	defer func() {
		if r := recover(); r != nil {
			rc = setErr(errOut, codes.Internal, fmt.Sprintf("panic in libpubsubgo: %v\n%s", r, debug.Stack()))
		}
	}()
	if err := f(); err != nil {
		code := rpc.Code(err)
		if code == codes.OK {
			code = codes.Unknown
		}
		return setErr(errOut, code, err.Error())
	}
	return 0
}

// grpcPrefix is the noise gRPC puts in front of a status message.
var grpcPrefix = regexp.MustCompile(`rpc error: code = \w+ desc = `)

func setErr(errOut **C.char, code codes.Code, msg string) C.int {
	if errOut != nil {
		*errOut = C.CString(errorText(code, msg))
	}
	return C.int(code)
}

// errorText is what callers see: the canonical code name, then the message
// without gRPC's "rpc error: code = ... desc =" noise.
func errorText(code codes.Code, msg string) string {
	msg = grpcPrefix.ReplaceAllString(msg, "")
	name := codeNames[code]
	if name == "" {
		name = code.String()
	}
	if !strings.HasPrefix(msg, name) {
		msg = name + ": " + msg
	}
	return msg
}

func setString(out **C.char, s string) {
	if out != nil {
		*out = C.CString(s)
	}
}

// decodeConfig parses a JSON config strictly into dst.
func decodeConfig(what string, raw *C.char, dst any) error {
	if raw == nil {
		return rpc.Errorf(codes.InvalidArgument, "%s config is NULL; expected a JSON object", what)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(C.GoString(raw))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return rpc.Errorf(codes.InvalidArgument, "malformed %s config: %v", what, err)
	}
	return nil
}

//export pg_free
func pg_free(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}
