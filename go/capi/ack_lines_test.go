package main

import (
	"slices"
	"strings"
	"testing"
)

// ackIDLines must split exactly as the line splitting it replaced: every
// non-empty line, in order, whatever the blank lines and the last newline.
func TestAckIDLinesSplitsAsFieldsFunc(t *testing.T) {
	for _, text := range []string{
		"", "\n", "\n\n", "a", "a\n", "a\nb", "a\nb\n", "\na\n\nb\n\n", "x y\nz\t\n",
		"projects/p/subscriptions/s:1-2\n3-ä\n",
	} {
		want := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' })
		got := ackIDLines(text)
		if !slices.Equal(got, want) {
			t.Errorf("ackIDLines(%q) = %q, want %q", text, got, want)
		}
	}
}

func BenchmarkAckIDLines(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 4000; i++ {
		sb.WriteString("1a2b-3c4d5e\n")
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if len(ackIDLines(text)) != 4000 {
			b.Fatal("wrong count")
		}
	}
}
