package ingest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// venvPython is the repository's venv interpreter (build/venv, made by
// `make venv`), found by walking up from the test's directory to go.mod.
// The tests that need it fail, not skip, when it is missing: `make test`
// builds it first.
func venvPython(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test's directory")
		dir = parent
	}
	py := filepath.Join(dir, "build", "venv", "bin", "python")
	_, err = os.Stat(py)
	require.NoError(t, err, "the test publisher needs the venv (pyzmq, msgspec): run `make venv` (looked for %s)", py)
	return py
}

// pyEngine drives testdata/publisher.py: a Python process publishing as
// vLLM and SGLang do, one JSON command a line.
type pyEngine struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	mu    sync.Mutex
}

func startEngine(t *testing.T) *pyEngine {
	t.Helper()
	cmd := exec.Command(venvPython(t), "testdata/publisher.py")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	e := &pyEngine{t: t, cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	e.out.Buffer(make([]byte, 1<<20), 1<<20)
	require.True(t, e.out.Scan(), "the publisher did not start")
	t.Cleanup(func() {
		_, _ = io.WriteString(stdin, `{"op":"quit"}`+"\n")
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return e
}

// do sends one command and returns its answer; an error answer fails the
// test.
func (e *pyEngine) do(cmd map[string]any) map[string]any {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	line, err := json.Marshal(cmd)
	require.NoError(e.t, err)
	_, err = e.stdin.Write(append(line, '\n'))
	require.NoError(e.t, err)
	require.True(e.t, e.out.Scan(), "the publisher exited")
	var ans map[string]any
	require.NoError(e.t, json.Unmarshal(e.out.Bytes(), &ans))
	require.Equal(e.t, true, ans["ok"], "publisher: %v (command %s)", ans["error"], line)
	return ans
}

// send publishes one batch and returns its seq.
func (e *pyEngine) send(name string, batch map[string]any) uint64 {
	e.t.Helper()
	cmd := map[string]any{"op": "send", "name": name}
	for k, v := range batch {
		cmd[k] = v
	}
	return uint64(e.do(cmd)["seq"].(float64))
}

// freePorts returns n consecutive free TCP ports on 127.0.0.1 (rank r of
// an engine publishes on port + r).
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		base := l.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{l}
		ok := true
		for i := 1; i < n; i++ {
			li, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, li)
		}
		for _, li := range ls {
			_ = li.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

func tcp(port int) string { return fmt.Sprintf("tcp://127.0.0.1:%d", port) }

// recorder is a Handler that keeps everything it hears, in order.
type recorder struct {
	mu      sync.Mutex
	batches []recorded
	streams []recordedStream
	changed chan struct{}
}

type recorded struct {
	src Source
	b   *Batch
}

type recordedStream struct {
	src Source
	ev  StreamEvent
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) HandleBatch(src Source, b *Batch) {
	r.mu.Lock()
	r.batches = append(r.batches, recorded{src, b})
	r.mu.Unlock()
	r.notify()
}

func (r *recorder) HandleStream(src Source, ev StreamEvent) {
	r.mu.Lock()
	r.streams = append(r.streams, recordedStream{src, ev})
	r.mu.Unlock()
	r.notify()
}

func (r *recorder) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// waitFor polls cond (under the recorder's lock) until it holds.
func (r *recorder) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("timed out waiting for %s; batches %v; stream events %v", what, r.seqsLocked(), r.kindsLocked())
		}
	}
}

// seqsLocked lists the delivered seqs.
func (r *recorder) seqsLocked() []uint64 {
	out := []uint64{}
	for _, b := range r.batches {
		out = append(out, b.b.Seq)
	}
	return out
}

func (r *recorder) seqs() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seqsLocked()
}

func (r *recorder) kindsLocked() []string {
	out := []string{}
	for _, s := range r.streams {
		out = append(out, fmt.Sprintf("%s[%d,%d)", s.ev.Kind, s.ev.From, s.ev.To))
	}
	return out
}

func (r *recorder) streamEvents(kind StreamEventKind) []StreamEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []StreamEvent
	for _, s := range r.streams {
		if s.ev.Kind == kind {
			out = append(out, s.ev)
		}
	}
	return out
}

func (r *recorder) countLocked(kind StreamEventKind) int {
	n := 0
	for _, s := range r.streams {
		if s.ev.Kind == kind {
			n++
		}
	}
	return n
}
