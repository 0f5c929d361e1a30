// Package emulator serves an in-process Pub/Sub emulator built on the Go
// client's pstest fake, for users without the Google Cloud SDK.
package emulator

import (
	"fmt"
	"net"

	"cloud.google.com/go/pubsub/v2/pstest"
)

// Emulator is a running pstest server.
type Emulator struct {
	srv *pstest.Server
}

// Start listens on hostPort ("127.0.0.1:0" picks a free port).
func Start(hostPort string) (e *Emulator, err error) {
	host, _, splitErr := net.SplitHostPort(hostPort)
	if splitErr != nil {
		return nil, fmt.Errorf("emulator address %q: %v (expected host:port, e.g. 127.0.0.1:8085)", hostPort, splitErr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("emulator address %q: the embedded emulator only listens on loopback (127.0.0.1, ::1 or localhost)", hostPort)
	}
	// pstest panics when it cannot listen; turn that into an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("emulator cannot listen on %s: %v", hostPort, r)
		}
	}()
	return &Emulator{srv: pstest.NewServerWithAddress(hostPort)}, nil
}

// Addr is the bound host:port.
func (e *Emulator) Addr() string { return e.srv.Addr }

// Stop closes the server.
func (e *Emulator) Stop() error { return e.srv.Close() }
