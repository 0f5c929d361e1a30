// Command json is the built-in JSON decoder module (json.wasm).
package main

import (
	"github.com/pubsub-go/pubsub-go/wasm-decoders/jsondec"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

func init() { sdk.Register(jsondec.New) }

func main() {}
