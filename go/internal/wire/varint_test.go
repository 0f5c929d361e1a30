package wire

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// consumeTag and consumeBytes give protowire's results, errors included,
// for every input of up to three bytes and for lengths around the
// one-byte limit.
func TestConsumeMatchesProtowire(t *testing.T) {
	var inputs [][]byte
	inputs = append(inputs, nil)
	for b0 := range 256 {
		inputs = append(inputs, []byte{byte(b0)})
		for b1 := range 256 {
			inputs = append(inputs, []byte{byte(b0), byte(b1)}, []byte{byte(b0), byte(b1), 0x7f})
		}
	}
	for _, n := range []int{0, 1, 126, 127, 128, 129, 300} {
		b := protowire.AppendBytes(nil, bytes.Repeat([]byte{'x'}, n))
		inputs = append(inputs, b, b[:len(b)-1], append(b, 'y'))
	}
	for _, in := range inputs {
		num, typ, n := consumeTag(in)
		wnum, wtyp, wn := protowire.ConsumeTag(in)
		if num != wnum || typ != wtyp || n != wn {
			t.Fatalf("consumeTag(% x) = %d, %d, %d; protowire: %d, %d, %d", in, num, typ, n, wnum, wtyp, wn)
		}
		v, n := consumeBytes(in)
		wv, wn := protowire.ConsumeBytes(in)
		if !bytes.Equal(v, wv) || (v == nil) != (wv == nil) || n != wn {
			t.Fatalf("consumeBytes(% x) = %q, %d; protowire: %q, %d", in, v, n, wv, wn)
		}
	}
}
