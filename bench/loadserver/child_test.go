package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv, when set, makes the test binary serve as a load server with
// those flags instead of running tests: benchmarks run the server in its
// own process so its CPU can be measured apart from the client's.
const childEnv = "LOADSERVER_BENCH_CHILD"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childEnv); ok {
		os.Exit(serveChild(strings.Fields(args)))
	}
	os.Exit(m.Run())
}

// serveChild runs a server, prints its address, then answers every line
// on stdin with its own CPU time (user+system, ns) until stdin closes.
func serveChild(args []string) int {
	o := defaultOptions()
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	in, err := start(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadserver child:", err)
		return 2
	}
	defer in.close()
	fmt.Println(in.addr)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Println(cpuNanos())
	}
	return 0
}

// cpuNanos is this process's user+system CPU time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// childServer is a load server in a child process.
type childServer struct {
	addr string
	cmd  *exec.Cmd
	in   *bufio.Writer
	out  *bufio.Scanner
}

// startChild starts a load server process with args (loadserver flags)
// and stops it when the test ends.
func startChild(tb testing.TB, args ...string) *childServer {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(args, " "))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &childServer{cmd: cmd, in: bufio.NewWriter(stdin), out: bufio.NewScanner(stdout)}
	tb.Cleanup(func() {
		stdin.Close() // the child exits on EOF
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	if !c.out.Scan() {
		tb.Fatalf("load server child printed no address: %v", c.out.Err())
	}
	c.addr = c.out.Text()
	return c
}

// cpu is the child's CPU time so far.
func (c *childServer) cpu(tb testing.TB) time.Duration {
	tb.Helper()
	c.in.WriteString("\n")
	if err := c.in.Flush(); err != nil {
		tb.Fatal(err)
	}
	if !c.out.Scan() {
		tb.Fatalf("load server child: %v", c.out.Err())
	}
	ns, err := strconv.ParseInt(c.out.Text(), 10, 64)
	if err != nil || ns < 0 {
		tb.Fatalf("load server child cpu %q: %v", c.out.Text(), err)
	}
	return time.Duration(ns)
}
