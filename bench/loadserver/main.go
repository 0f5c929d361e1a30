// Command loadserver is a Pub/Sub server for benchmarks: it implements
// enough of google.pubsub.v1.Publisher and Subscriber for Google's clients
// (and ours) to run against it through PUBSUB_EMULATOR_HOST, serving
// synthetic messages at line rate and counting what clients do.
//
// The first line on stdout is "listening on HOST:PORT"; with --http a second
// line "http on HOST:PORT" follows. On SIGTERM or SIGINT the final counters
// are printed as one JSON line.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// gcPercent is the load server's GOGC unless the environment sets one. It
// stands in for a remote service, so the CPU it takes from the machine
// under test should be the protocol's, not its garbage collector's: at
// Go's default (100) the collector was 17% of its CPU while it received a
// Spark sink's publishes (every PublishRequest is decoded into a message
// object per row). Its heap is small and short-lived, so trading memory
// for collections costs nothing that is measured.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	o := defaultOptions()
	o.register(flag.CommandLine)
	flag.Parse()
	in, err := start(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadserver:", err)
		os.Exit(2)
	}
	fmt.Println("listening on", in.addr)
	if in.httpAddr != "" {
		fmt.Println("http on", in.httpAddr)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	snap := in.snapshot()
	in.close()
	json.NewEncoder(os.Stdout).Encode(snap)
}
