package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveReal serves srv's HTTPServer on a real loopback listener.
func serveReal(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := srv.HTTPServer()
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

// trickle writes head, then one byte of fill every tick until the
// server closes the connection or giveUp passes; it returns how long
// the connection stayed open.
func trickle(addr, head string, tick, giveUp time.Duration) (time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, head); err != nil {
		return 0, err
	}
	closed := make(chan struct{})
	go func() { // the server's answer (if any), then its close
		_, _ = io.Copy(io.Discard, c)
		close(closed)
	}()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-closed:
			return time.Since(start), nil
		case <-t.C:
			if time.Since(start) > giveUp {
				return time.Since(start), fmt.Errorf("still open after %v", giveUp)
			}
			_, _ = c.Write([]byte("x"))
		}
	}
}

// Clients that send their headers or their body a byte at a time are
// cut off at the configured timeouts, ten at once as well as one.
func TestSlowClientsAreCut(t *testing.T) {
	c := testConfig()
	c.Limits.ReadHeaderTimeout = 300 * time.Millisecond
	c.Limits.ReadBodyTimeout = 400 * time.Millisecond
	srv, err := New(Options{Config: c})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Shutdown(t.Context()) })
	addr := serveReal(t, srv)

	tests := []struct{ name, head string }{
		{"slow body", "POST /v1/events?worker_id=1 HTTP/1.1\r\nHost: kvrouter\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"},
		{"slow headers", "POST /v1/events?worker_id=1 HTTP/1.1\r\nHost: kvrouter\r\nX-Slow: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			open := make([]time.Duration, 10)
			errs := make([]error, 10)
			for i := range open {
				wg.Add(1)
				go func() {
					defer wg.Done()
					open[i], errs[i] = trickle(addr, tc.head, 50*time.Millisecond, 10*time.Second)
				}()
			}
			wg.Wait()
			for i := range open {
				require.NoError(t, errs[i], "connection %d", i)
				// Cut near the timeout: well under the give-up bound, and
				// not before the timeout itself.
				assert.Less(t, open[i], 5*time.Second, "connection %d", i)
				assert.GreaterOrEqual(t, open[i], 250*time.Millisecond, "connection %d", i)
			}
		})
	}
}

// The body deadline ends with the body: a handler that answers long
// after (a streamed completion) is neither cut nor cancelled.
func TestBodyDeadlineLiftedAfterBody(t *testing.T) {
	const timeout = 200 * time.Millisecond
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limitBodyTime(w, r, timeout)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
		for i := range 6 { // 600 ms of answer: three times the body timeout
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			_, _ = fmt.Fprintf(w, "data: %d %s\n", i, body)
			http.NewResponseController(w).Flush()
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(out), "data: 5 hi", "the whole stream arrived")
}
