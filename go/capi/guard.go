package main

/*
#include <stdlib.h>
#include "pubsubgo.h"
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

// guard runs f, turning its error or a panic into a status code and the
// typed reason in *errOut. It is the only way exported calls run Go code.
func guard(errOut *C.struct_PgError, f func() error) (rc C.int) {
	defer func() {
		if r := recover(); r != nil {
			rc = setErr(errOut, codes.Internal, rpc.KindPanic, fmt.Sprintf("panic in libpubsubgo: %v\n%s", r, debug.Stack()))
		}
	}()
	if err := f(); err != nil {
		code := rpc.Code(err)
		if code == codes.OK {
			code = codes.Unknown
		}
		return setErr(errOut, code, rpc.KindOf(err), err.Error())
	}
	return 0
}

// grpcPrefix is the noise gRPC puts in front of a status message.
var grpcPrefix = regexp.MustCompile(`rpc error: code = \w+ desc = `)

func setErr(errOut *C.struct_PgError, code codes.Code, kind rpc.Kind, msg string) C.int {
	if errOut != nil {
		errOut.code = C.int32_t(code)
		k := kindBytes(kind)
		for i := range errOut.kind {
			errOut.kind[i] = C.char(k[i])
		}
		errOut.message = C.CString(errorText(code, msg))
	}
	return C.int(code)
}

// kindBytes is kind NUL-terminated in PgError.kind's size (kinds are short:
// TestKindsFitTheCStruct).
func kindBytes(kind rpc.Kind) (b [len(C.struct_PgError{}.kind)]byte) {
	copy(b[:len(b)-1], kind)
	return b
}

// errorText is what callers see: the canonical code name, then the message
// without gRPC's "rpc error: code = ... desc =" noise.
func errorText(code codes.Code, msg string) string {
	msg = grpcPrefix.ReplaceAllString(msg, "")
	name := rpc.CodeName(code)
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

//export pg_error_release
func pg_error_release(err *C.struct_PgError) {
	if err != nil {
		pg_free(err.message)
		*err = C.struct_PgError{}
	}
}

//export pg_free
func pg_free(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}
