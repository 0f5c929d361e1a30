package main

import (
	"fmt"
	"testing"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// VpcLine is the benchmark record i, the same in every vpcflow benchmark
// (Go and C, native and WebAssembly; bench/tools/decode_bench.py).
func vpcLine(i int) []byte {
	return fmt.Appendf(nil, "2 123456789010 eni-%08x 172.31.%d.%d 10.0.%d.%d %d 443 6 %d %d %d %d ACCEPT OK",
		i, i%256, i%200, i%100, i%250, 20000+i%40000, i%1000, i*37%100000, 1418530010+i, 1418530070+i)
}

// BenchmarkVpcflowNative: the Go example decoder compiled natively
// (including its IPC output, as the .wasm build produces it).
func BenchmarkVpcflowNative(b *testing.B) {
	m := sdk.NewModule(newDecoder)
	if err := m.Init(sdk.EncodeConfig(nil, nil)); err != nil {
		b.Fatal(err)
	}
	var payloads [][]byte
	size := 0
	for i := 0; i < 1000; i++ {
		payloads = append(payloads, vpcLine(i))
		size += len(payloads[i])
	}
	in := sdk.EncodeInput(payloads)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
