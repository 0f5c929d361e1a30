// Command hostile is a misbehaving decoder for the hosts' sandbox tests.
// Each payload names what to do: "ok" decodes it into the utf8 column,
// "loop" never returns, "alloc" allocates without bound, "panic" panics
// (the SDK turns that into a row error), "exit" exits the module, and
// "probe" reports what the sandbox lets it see.
package main

import (
	"fmt"
	"os"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

type hostile struct{}

var hoard [][]byte

func (hostile) Decode(p []byte, cols []*arrowlite.Builder) error {
	switch string(p) {
	case "loop":
		for i := 0; ; i++ {
			if i < 0 {
				break
			}
		}
	case "alloc":
		for {
			b := make([]byte, 1<<20)
			b[0] = 1
			hoard = append(hoard, b)
		}
	case "panic":
		panic("boom")
	case "exit":
		os.Exit(3)
	case "probe":
		_, ferr := os.ReadFile("/etc/hostname")
		_, derr := os.ReadDir(".")
		p = []byte(fmt.Sprintf("env=%d args=%d file=%v dir=%v", len(os.Environ()), len(os.Args), ferr != nil, derr != nil))
	}
	cols[0].AppendBytes(p)
	return nil
}

func init() {
	sdk.Register(func(cfg sdk.Config) (sdk.Decoder, *arrowlite.Schema, error) {
		s := &arrowlite.Schema{Fields: []arrowlite.Field{{Name: "v", Nullable: true, Type: arrowlite.Utf8Type()}}}
		return hostile{}, s, nil
	})
}

func main() {}
