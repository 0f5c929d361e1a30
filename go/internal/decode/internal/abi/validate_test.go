package abi

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// What load checks of a utf8 column (checkOffsets, then checkUTF8; then
// validateColumn) accepts exactly what array.ValidateFull accepts,
// including values that are invalid alone but valid UTF-8 when
// concatenated (a character split across two values).
func TestStringChecksAcceptWhatValidateFullAccepts(t *testing.T) {
	cases := map[string]struct {
		data string
		offs []int32
	}{
		"ascii":          {"abcdef", []int32{0, 2, 2, 6}},
		"multibyte":      {"é€x😀", []int32{0, 2, 5, 6, 10}},
		"split rune":     {"é", []int32{0, 1, 2}},
		"invalid byte":   {"a\xffb", []int32{0, 1, 3}},
		"empty":          {"", []int32{0, 0, 0}},
		"bytes past end": {"ab\xff", []int32{0, 1, 2}},
		"decreasing":     {"abc", []int32{0, 2, 1, 3}},
		// Past the 32 bytes the ASCII test takes at a time.
		"long ascii":            {strings.Repeat("a", 70), []int32{0, 10, 40, 70}},
		"long, decreasing":      {strings.Repeat("a", 70), []int32{0, 40, 10, 70}},
		"long, invalid past 32": {strings.Repeat("a", 35) + "\xffbb", []int32{0, 20, 38}},
		"long, rune past 32":    {strings.Repeat("a", 33) + "é", []int32{0, 33, 35}},
		"long, split past 32":   {strings.Repeat("a", 33) + "é", []int32{0, 34, 35}},
	}
	for name, c := range cases {
		offs := make([]byte, 0, 4*len(c.offs))
		for _, o := range c.offs {
			offs = append(offs, byte(o), byte(o>>8), byte(o>>16), byte(o>>24))
		}
		d := array.NewData(arrow.BinaryTypes.String, len(c.offs)-1,
			[]*memory.Buffer{nil, memory.NewBufferBytes(offs), memory.NewBufferBytes([]byte(c.data))}, nil, 0, 0)
		a := array.MakeFromData(d)
		want := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = errPanicked
				}
			}()
			return array.ValidateFull(a)
		}()
		got := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = errPanicked
				}
			}()
			bufs := d.Buffers()
			if err := checkOffsets(bufs[1], d.Len(), bufLen(bufs[2])); err != nil {
				return err
			}
			if err := checkUTF8(bufs[1], d.Len(), bufs[2]); err != nil {
				return err
			}
			return validateColumn(a)
		}()
		if (got == nil) != (want == nil) {
			t.Errorf("%s: load's checks = %v, ValidateFull = %v", name, got, want)
		}
		a.Release()
		d.Release()
	}
}

var errPanicked = errorString("panicked")

type errorString string

func (e errorString) Error() string { return string(e) }
