package rpc

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCodeSeesThroughWrapping(t *testing.T) {
	cases := []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{status.Error(codes.NotFound, "x"), codes.NotFound},
		{fmt.Errorf("open: %w", status.Error(codes.PermissionDenied, "x")), codes.PermissionDenied},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{fmt.Errorf("wait: %w", context.Canceled), codes.Canceled},
		{errors.New("plain"), codes.Unknown},
		{fmt.Errorf("x: %w", Closed("gone")), codes.FailedPrecondition},
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetryableSplitsTransientFromDefinitive(t *testing.T) {
	for _, c := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Internal} {
		if !Retryable(status.Error(c, "x")) {
			t.Errorf("%v should be retryable", c)
		}
	}
	for _, c := range []codes.Code{codes.PermissionDenied, codes.NotFound, codes.InvalidArgument, codes.FailedPrecondition, codes.Unauthenticated} {
		if Retryable(status.Error(c, "x")) {
			t.Errorf("%v must not be retried", c)
		}
	}
}

func TestKindIsMarkedOrFollowsTheCode(t *testing.T) {
	cases := []struct {
		err  error
		want Kind
	}{
		{status.Error(codes.NotFound, "x"), "not_found"},
		{fmt.Errorf("open: %w", status.Error(codes.Unavailable, "x")), "unavailable"},
		{errors.New("plain"), "unknown"},
		{fmt.Errorf("next: %w", Closed("subscriber is closed")), KindClosed},
		{Describe(WithKind(KindDecoderCrashed, status.Error(codes.Aborted, "trap")), "decoding", ""), KindDecoderCrashed},
	}
	for _, c := range cases {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	for k, c := range Kinds {
		if k == "" || c == codes.OK {
			t.Errorf("kind %q with code %v", k, c)
		}
	}
}

func TestDescribeWritesNoCodeName(t *testing.T) {
	err := Describe(status.Error(codes.NotFound, "Topic not found"), "publish to projects/p/topics/t", "")
	if got, want := Detail(err), "publish to projects/p/topics/t: Topic not found"; got != want || Code(err) != codes.NotFound {
		t.Fatalf("Describe = %q (%v), want %q (NotFound)", got, Code(err), want)
	}
}
