//go:build !pubsubgo_debug

package main

// debugHook marks where the test build (debug.go) injects a fault; in a
// release build it does nothing and compiles away.
func debugHook(string) {}
