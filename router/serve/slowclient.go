package serve

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// limitBodyTime gives a request's body timeout to arrive in full: a
// client that trickles its body is cut off (its read fails, the
// connection closes). The deadline ends with the body, so a long
// streamed answer is never cut by it: deadlineBody lifts it at the
// body's end (net/http also clears it there, when it starts watching
// for the client's close; this does not rely on that). It is set only
// for a request with a body: for one without, that watch is already
// running, and a deadline would end it, cancelling the request.
func limitBodyTime(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	if timeout <= 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return // not a real connection (a test's recorder)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
}

// deadlineBody lifts the read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	lift func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.lift)
	}
	return n, err
}

// HTTPServer is an http.Server for Handler with the slow-client
// timeouts: headers within limits.read_header_timeout, the body within
// limits.read_body_timeout (set per request, see limitBodyTime), idle
// keep-alive connections closed after limits.idle_timeout. There is no
// write timeout: a streamed completion may take as long as the engine.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.Limits.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.Limits.IdleTimeout,
	}
}
