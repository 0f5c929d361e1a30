package wire

import (
	"testing"
	"unicode/utf8"
)

// shortASCII || utf8.Valid, the parser's check, must agree with utf8.Valid
// on every input, the lengths of the fast path and their edges above all;
// and the fast path must take the ASCII strings it is for.
func TestShortASCIIIsValidUTF8(t *testing.T) {
	bad := []string{"\x80", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80"} // stray, truncated, surrogate
	good := []string{"é", "€", "😀"}
	for n := 0; n <= 20; n++ {
		ascii := make([]byte, n)
		for i := range ascii {
			ascii[i] = 'a' + byte(i%26)
		}
		checkUTF8(t, ascii)
		if fast := shortASCII(ascii); fast != (n >= 8 && n <= 16) {
			t.Errorf("shortASCII(%q) = %v", ascii, fast)
		}
		for pos := 0; pos <= n; pos++ {
			for _, s := range append(bad, good...) {
				b := append(append(append([]byte{}, ascii[:pos]...), s...), ascii[pos:]...)
				checkUTF8(t, b)
			}
		}
	}
}

func FuzzShortASCII(f *testing.F) {
	f.Add([]byte("attr-000"))
	f.Add([]byte("value-\xff00"))
	f.Fuzz(func(t *testing.T, b []byte) { checkUTF8(t, b) })
}

func checkUTF8(t *testing.T, b []byte) {
	t.Helper()
	if got, want := shortASCII(b) || utf8.Valid(b), utf8.Valid(b); got != want {
		t.Fatalf("shortASCII(%q) || utf8.Valid = %v, utf8.Valid alone %v", b, got, want)
	}
}
