package enginetest

import (
	"fmt"
	"net"
	"testing"
)

// FreePorts returns the first of n consecutive free TCP ports on
// 127.0.0.1 (rank r of an engine publishes on port + r). The ports are
// free when checked; a test binds them at once after.
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	for range 50 {
		if base, ok := tryFreeRun(t, n); ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// tryFreeRun listens on a kernel-chosen port and the n-1 above it, then
// closes them all; ok says whether all n could be bound.
func tryFreeRun(t testing.TB, n int) (base int, ok bool) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening on loopback: %v", err)
	}
	base = l.Addr().(*net.TCPAddr).Port
	ls := []net.Listener{l}
	defer func() {
		for _, li := range ls {
			_ = li.Close()
		}
	}()
	for i := 1; i < n; i++ {
		li, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
		if err != nil {
			return 0, false
		}
		ls = append(ls, li)
	}
	return base, true
}

// TCP is the ZeroMQ endpoint of port on 127.0.0.1.
func TCP(port int) string { return fmt.Sprintf("tcp://127.0.0.1:%d", port) }
