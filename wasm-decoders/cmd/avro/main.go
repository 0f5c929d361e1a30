// Command avro is the built-in Avro decoder module (avro.wasm).
package main

import (
	"github.com/pubsub-go/pubsub-go/wasm-decoders/avrodec"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

func init() { sdk.Register(avrodec.New) }

func main() {}
