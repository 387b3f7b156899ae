package enginetest

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Publisher drives router/ingest/testdata/publisher.py: one Python process
// running any number of engine ranks, each a PUB socket and an optional
// ROUTER replay socket, emitting vLLM's and SGLang's wire byte for byte
// (msgspec over the engines' own structs). It takes one JSON command a
// line ("open", "wait_sub", "send", "raw", "close") and answers each.
type Publisher struct {
	t   testing.TB
	in  io.WriteCloser
	out *bufio.Scanner
	mu  sync.Mutex // one command and its answer at a time
}

// quitWait bounds how long the publisher may take to exit when the test
// ends before it is killed.
const quitWait = 5 * time.Second

// StartPublisher starts the publisher and waits for its ready line; it
// quits when the test ends.
func StartPublisher(t testing.TB) *Publisher {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "router", "ingest", "testdata", "publisher.py")
	cmd := exec.Command(VenvPython(t), script)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &Publisher{t: t, in: in, out: bufio.NewScanner(out)}
	p.out.Buffer(make([]byte, 1<<20), 1<<20)
	require.True(t, p.out.Scan(), "the publisher did not start")
	t.Cleanup(func() {
		_, _ = io.WriteString(in, `{"op":"quit"}`+"\n")
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(quitWait):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return p
}

// Do sends one command and returns its answer; an error answer fails the
// test.
func (p *Publisher) Do(cmd map[string]any) map[string]any {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	line, err := json.Marshal(cmd)
	require.NoError(p.t, err)
	_, err = p.in.Write(append(line, '\n'))
	require.NoError(p.t, err)
	require.True(p.t, p.out.Scan(), "the publisher exited")
	var ans map[string]any
	require.NoError(p.t, json.Unmarshal(p.out.Bytes(), &ans))
	require.Equal(p.t, true, ans["ok"], "publisher: %v (command %s)", ans["error"], line)
	return ans
}

// Send publishes one batch from rank name and returns its seq. fields are
// the send command's own: "events", and options such as "layout",
// "skip" or "seq".
func (p *Publisher) Send(name string, fields map[string]any) uint64 {
	p.t.Helper()
	cmd := map[string]any{"op": "send", "name": name}
	maps.Copy(cmd, fields)
	return uint64(p.Do(cmd)["seq"].(float64))
}
