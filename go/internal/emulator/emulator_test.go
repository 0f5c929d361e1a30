package emulator

import (
	"net"
	"strings"
	"testing"
)

func TestStartServesOnFreeLoopbackPort(t *testing.T) {
	e, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	c, err := net.Dial("tcp", e.Addr())
	if err != nil {
		t.Fatalf("dial %s: %v", e.Addr(), err)
	}
	c.Close()
}

func TestStartRejectsNonLoopbackAndBusyPort(t *testing.T) {
	if _, err := Start("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("0.0.0.0: err = %v, want a loopback error", err)
	}
	if _, err := Start("nonsense"); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("nonsense: err = %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Start(l.Addr().String()); err == nil || !strings.Contains(err.Error(), "cannot listen") {
		t.Fatalf("busy port: err = %v, want 'cannot listen'", err)
	}
}
