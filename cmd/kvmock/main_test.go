package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logLines collects the program's JSON log lines.
type logLines struct {
	mu    sync.Mutex
	lines []map[string]any
	buf   strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	sc := bufio.NewScanner(strings.NewReader(l.buf.String()))
	l.lines = nil
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			l.lines = append(l.lines, m)
		}
	}
	return len(p), nil
}

func (l *logLines) find(msg string) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.lines {
		if m["msg"] == msg {
			return m
		}
	}
	return nil
}

// TestRunServesAndShutsDown runs the whole program on loopback: it logs
// where it listens, serves a completion, publishes its events, and exits 0
// when its context ends.
func TestRunServesAndShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &logLines{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{
			"--listen", "127.0.0.1:0", "--kv-events-endpoint", "tcp://127.0.0.1:*",
			"--replay-endpoint", "tcp://127.0.0.1:*", "--block-size", "4", "--speedup", "1000",
			"--log-format", "json", "--topic", "kv",
		}, logs)
	}()
	var ready map[string]any
	require.Eventually(t, func() bool { ready = logs.find("kvmock ready"); return ready != nil }, 10*time.Second, 5*time.Millisecond)
	base := "http://" + ready["http"].(string)

	resp, err := http.Get(base + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	sub := zmq4.NewSub(context.Background())
	defer sub.Close()
	require.NoError(t, sub.Dial("tcp://"+ready["kv_events_bound"].(string)))
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, "kv"))
	got := make(chan zmq4.Msg, 1)
	go func() {
		if m, err := sub.Recv(); err == nil {
			got <- m
		}
	}()
	// The subscription reaches the publisher asynchronously: send until an
	// event arrives (each prompt is new, so each stores blocks).
	var msg zmq4.Msg
	deadline := time.After(10 * time.Second)
	for i := 0; msg.Frames == nil; i++ {
		body := `{"prompt":[` + strings.Repeat("7,", i%50) + `1,2,3,4,5,6,7,8,9],"max_tokens":1}`
		resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		select {
		case msg = <-got:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			require.FailNow(t, "no KV event received")
		}
	}
	require.Len(t, msg.Frames, 3)
	assert.Equal(t, "kv", string(msg.Frames[0]))
	assert.Len(t, msg.Frames[1], 8)
	_ = binary.BigEndian.Uint64(msg.Frames[1])

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "kvmock did not shut down")
	}
	assert.NotNil(t, logs.find("kvmock stopped"))
}

func TestReadyFile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "ready.json")
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--kv-events-endpoint", "tcp://127.0.0.1:*",
			"--replay-endpoint", "tcp://127.0.0.1:*", "--unstable", "--ready-file", path, "--log-format", "json"}, &logLines{})
	}()
	var info readyInfo
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(b, &info) == nil
	}, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, os.Getpid(), info.PID)
	assert.True(t, strings.HasPrefix(info.KVEvents, "tcp://127.0.0.1:"), info.KVEvents)
	assert.True(t, strings.HasPrefix(info.Replay, "tcp://127.0.0.1:"), info.Replay)
	assert.Len(t, info.Root, 64)
	resp, err := http.Get("http://" + info.HTTP + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	assert.Equal(t, 0, <-done)
}

func TestRunFailsOnABusyPort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &logLines{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--kv-events-endpoint", "", "--log-format", "json"}, logs)
	}()
	var ready map[string]any
	require.Eventually(t, func() bool { ready = logs.find("kvmock ready"); return ready != nil }, 10*time.Second, 5*time.Millisecond)

	second := &logLines{}
	code := run(context.Background(), []string{"--listen", ready["http"].(string), "--kv-events-endpoint", "", "--log-format", "json"}, second)
	assert.Equal(t, 1, code)
	assert.NotNil(t, second.find("kvmock: cannot listen"))
	cancel()
	assert.Equal(t, 0, <-done)
}
