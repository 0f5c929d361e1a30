package sdk

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/internal/ipccheck"
)

// scripted decodes "ok:<s>" into both columns, fails "bad" after a
// partial append, panics on "panic" and appends twice on "twice".
type scripted struct{}

func (scripted) Decode(p []byte, cols []*arrowlite.Builder) error {
	s := string(p)
	switch {
	case strings.HasPrefix(s, "ok:"):
		cols[0].AppendList()
		cols[0].Children[0].AppendString(s[3:])
		cols[1].AppendInt(int64(len(s)))
	case s == "bad":
		cols[0].AppendList()
		cols[0].Children[0].AppendString("partial")
		return errors.New("bad row")
	case s == "panic":
		cols[1].AppendInt(1)
		panic("kaboom")
	case s == "twice":
		cols[1].AppendInt(1)
		cols[1].AppendInt(2)
	case s == "skip":
		cols[1].AppendInt(7) // column 0 left out: becomes null
	}
	return nil
}

func scriptedFactory(cfg Config) (Decoder, *arrowlite.Schema, error) {
	return scripted{}, &arrowlite.Schema{Fields: []arrowlite.Field{
		{Name: "l", Nullable: true, Type: arrowlite.ListType(arrowlite.Field{Name: "item", Nullable: true, Type: arrowlite.Utf8Type()})},
		{Name: "n", Nullable: true, Type: arrowlite.IntType(64, true)},
	}}, nil
}

func TestRowsAreAtomic(t *testing.T) {
	m := NewModule(scriptedFactory)
	if err := m.Init(EncodeConfig(nil, map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	in := EncodeInput([][]byte{[]byte("ok:a"), []byte("bad"), []byte("panic"), []byte("twice"), []byte("skip"), []byte("ok:bc")})
	for round := 0; round < 2; round++ { // builders are reused
		out, err := m.Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ipccheck.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		l := rec.Column(0).(*array.List)
		if got := l.ListValues().Len(); got != 2 {
			t.Errorf("list child has %d values: a failed row leaked", got)
		}
		n := rec.Column(1).(*array.Int64)
		errs := rec.Column(2).(*array.String)
		want := []string{"", "bad row", "decoder panic: kaboom", `decoder appended 2 values to column "n"`, "", ""}
		for i, w := range want {
			if got := errs.ValueStr(i); (w == "" && errs.IsValid(i)) || (w != "" && got != w) {
				t.Errorf("row %d error %q, want %q", i, got, w)
			}
		}
		if !l.IsNull(4) || n.Value(4) != 7 || !n.IsNull(1) || !n.IsNull(2) || !n.IsNull(3) || n.Value(5) != 5 {
			t.Errorf("values: %v %v", l, n)
		}
		rec.Release()
	}
}

func TestConfigFraming(t *testing.T) {
	schema := arrowlite.EncodeSchema(&arrowlite.Schema{Fields: []arrowlite.Field{{Name: "a", Type: arrowlite.BoolType()}}})
	opts := map[string]string{"b": "2", "a": "", "long": strings.Repeat("x", 1000)}
	gotSchema, gotOpts, err := DecodeConfig(EncodeConfig(schema, opts))
	if err != nil || string(gotSchema) != string(schema) || len(gotOpts) != 3 || gotOpts["long"] != opts["long"] {
		t.Fatalf("round trip: %v %v", gotOpts, err)
	}
	good := EncodeConfig(schema, opts)
	for i := 0; i < len(good); i++ {
		if _, _, err := DecodeConfig(good[:i]); err == nil {
			t.Fatalf("truncated config (%d bytes) accepted", i)
		}
	}
}

func TestInputValidation(t *testing.T) {
	m := NewModule(scriptedFactory)
	if _, err := m.Decode(EncodeInput(nil)); err == nil {
		t.Fatal("decode before init accepted")
	}
	if err := m.Init(EncodeConfig(nil, nil)); err != nil {
		t.Fatal(err)
	}
	good := EncodeInput([][]byte{[]byte("ok:x"), []byte("ok:yy")})
	for _, bad := range [][]byte{nil, good[:7], good[:len(good)-1], append(append([]byte(nil), good...), 0)} {
		if _, err := m.Decode(bad); err == nil {
			t.Errorf("malformed input %x accepted", bad)
		}
	}
	swapped := append([]byte(nil), good...)
	swapped[8], swapped[12] = swapped[12], swapped[8] // offsets out of order
	if _, err := m.Decode(swapped); err == nil {
		t.Error("decreasing offsets accepted")
	}
	out, err := m.Decode(EncodeInput(nil))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ipccheck.Read(out)
	if err != nil || rec.NumRows() != 0 {
		t.Fatalf("empty batch: %v", err)
	}
	rec.Release()
}

func TestInitErrors(t *testing.T) {
	if err := NewModule(nil).Init(EncodeConfig(nil, nil)); err == nil || !strings.Contains(err.Error(), "no decoder registered") {
		t.Errorf("no factory: %v", err)
	}
	reserved := func(Config) (Decoder, *arrowlite.Schema, error) {
		return scripted{}, &arrowlite.Schema{Fields: []arrowlite.Field{{Name: ErrorColumn, Type: arrowlite.Utf8Type()}}}, nil
	}
	if err := NewModule(reserved).Init(EncodeConfig(nil, nil)); err == nil {
		t.Error("reserved column name accepted")
	}
	if err := NewModule(scriptedFactory).Init(EncodeConfig([]byte("garbage!"), nil)); err == nil {
		t.Error("garbage schema accepted")
	}
}
