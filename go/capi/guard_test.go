package main

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

func TestGuardTurnsPanicsIntoInternal(t *testing.T) {
	rc := guard(nil, func() error {
		var m map[string]int
		m["x"] = 1
		return nil
	})
	if codes.Code(rc) != codes.Internal {
		t.Fatalf("rc = %d, want INTERNAL", rc)
	}
}

func TestGuardMapsErrorCodes(t *testing.T) {
	cases := []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{status.Error(codes.NotFound, "gone"), codes.NotFound},
		{fmt.Errorf("open: %w", status.Error(codes.Unavailable, "down")), codes.Unavailable},
		{errors.New("plain"), codes.Unknown},
	}
	for _, c := range cases {
		if rc := guard(nil, func() error { return c.err }); codes.Code(rc) != c.want {
			t.Errorf("guard(%v) = %d, want %v", c.err, rc, c.want)
		}
	}
}

func TestErrorTextIsCanonicalAndClean(t *testing.T) {
	err := fmt.Errorf("publish to projects/p/topics/t: %w", status.Error(codes.NotFound, "Topic not found"))
	got := errorText(codes.NotFound, err.Error())
	want := "NOT_FOUND: publish to projects/p/topics/t: Topic not found"
	if got != want {
		t.Fatalf("errorText = %q, want %q", got, want)
	}
	if got := errorText(codes.InvalidArgument, "INVALID_ARGUMENT: bad"); got != "INVALID_ARGUMENT: bad" {
		t.Fatalf("prefix doubled: %q", got)
	}
}

func TestKindsFitTheCStruct(t *testing.T) {
	size := len(kindBytes(""))
	for k := range rpc.Kinds {
		b := kindBytes(k)
		if len(k) >= size || string(b[:len(k)]) != string(k) || b[len(k)] != 0 {
			t.Errorf("kind %q does not fit PgError.kind (%d bytes with its NUL)", k, size)
		}
	}
}
