package kvmock

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// sseWriter writes a Server-Sent Events stream as vLLM does: one
// "data: <json>\n\n" event per chunk, "data: [DONE]\n\n" at the end,
// flushed after every event so each token reaches the client (and a
// proxy's first-token detection) when it is produced.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *sseWriter) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode stream chunk: %w", err)
	}
	return s.write("data: " + string(b) + "\n\n")
}

func (s *sseWriter) done() error { return s.write("data: [DONE]\n\n") }

func (s *sseWriter) write(event string) error {
	if _, err := s.w.Write([]byte(event)); err != nil {
		return fmt.Errorf("write stream: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("flush stream: %w", err)
	}
	return nil
}
