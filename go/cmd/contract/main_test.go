package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The checked-in contract must be what the Go side generates now.
func TestContractIsCurrent(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "..", DefaultPath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: regenerate it with `go run ./go/cmd/contract` (from the repository root) and commit it", DefaultPath)
	}
}
