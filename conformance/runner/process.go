package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// answer is one decoded answer line, field by field, so that checks can
// tell an absent field from an empty one.
type answer map[string]json.RawMessage

// process is one running testee. It is started once and fed every request
// of a round over stdin; answers come back in request order.
type process struct {
	spec    testeeSpec
	timeout time.Duration
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan lineOrErr
	stderr  *tailBuffer
	hello   protocol.Hello
	nextID  int64
	dead    error // set once the process crashed, timed out or broke the protocol

	drainOnce sync.Once
	drainDone chan struct{}
}

type lineOrErr struct {
	line []byte
	err  error
}

// startProcess starts a testee and exchanges hello with it.
func startProcess(spec testeeSpec, timeout time.Duration) (*process, error) {
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	p := &process{spec: spec, timeout: timeout, cmd: cmd, lines: make(chan lineOrErr, 64),
		stderr: newTailBuffer(4096)}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("testee %s: stdin pipe: %w", spec.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("testee %s: stdout pipe: %w", spec.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testee %s: start %q: %w", spec.Name, spec.Argv, err)
	}
	p.stdin = stdin
	go p.readLines(stdout)
	answers, err := p.callAll([]protocol.Request{{Op: protocol.OpHello}})
	if err != nil {
		p.close()
		return nil, fmt.Errorf("testee %s: hello: %w", spec.Name, err)
	}
	if err := decodeField(answers[0], "binding", &p.hello.Binding); err != nil {
		p.close()
		return nil, fmt.Errorf("testee %s: hello: %w", spec.Name, err)
	}
	_ = decodeField(answers[0], "library_version", &p.hello.LibraryVersion)
	_ = decodeField(answers[0], "spec_version", &p.hello.SpecVersion)
	_ = decodeField(answers[0], "ops", &p.hello.Ops)
	return p, nil
}

// readLines forwards stdout lines until EOF, then the exit status: a
// testee that exits mid-round is a crash, whatever its status.
func (p *process) readLines(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err == nil {
			p.lines <- lineOrErr{line: line}
			continue
		}
		werr := p.cmd.Wait()
		if werr == nil {
			werr = errors.New("exit status 0")
		}
		p.lines <- lineOrErr{err: fmt.Errorf("testee exited (%v)", werr)}
		close(p.lines)
		return
	}
}

// callAll sends every request (assigning ids) while reading the answers,
// so a testee never blocks on a full pipe. It returns the answers received
// before the first failure and that failure: a timeout, a crash, an answer
// that is not JSON or whose id does not match. After a failure the process
// is dead and must be restarted.
func (p *process) callAll(reqs []protocol.Request) ([]answer, error) {
	if p.dead != nil {
		return nil, p.dead
	}
	for i := range reqs {
		p.nextID++
		reqs[i].ID = p.nextID
	}
	go func() {
		w := bufio.NewWriterSize(p.stdin, 1<<16)
		for _, r := range reqs {
			data, err := json.Marshal(r)
			if err != nil {
				panic(fmt.Sprintf("encode request: %v", err)) // our own types: a bug
			}
			if _, err := w.Write(append(data, '\n')); err != nil {
				return // the reader side reports the crash
			}
		}
		_ = w.Flush()
	}()
	answers := make([]answer, 0, len(reqs))
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	for _, r := range reqs {
		timer.Reset(p.timeout)
		var got lineOrErr
		select {
		case got = <-p.lines:
		case <-timer.C:
			return answers, p.fail(fmt.Errorf("timeout: no answer to request %d (%s) within %v", r.ID, r.Op, p.timeout))
		}
		if got.err != nil || got.line == nil {
			err := got.err
			if err == nil {
				err = errors.New("testee exited")
			}
			return answers, p.fail(fmt.Errorf("crash while answering request %d (%s): %w", r.ID, r.Op, err))
		}
		var a answer
		if err := json.Unmarshal(got.line, &a); err != nil {
			return answers, p.fail(fmt.Errorf("protocol: answer to request %d is not a JSON object: %v: %.200q", r.ID, err, got.line))
		}
		var id int64
		if err := decodeField(a, "id", &id); err != nil || id != r.ID {
			return answers, p.fail(fmt.Errorf("protocol: expected the answer to request %d, got id %s", r.ID, a["id"]))
		}
		answers = append(answers, a)
	}
	return answers, nil
}

// fail marks the process dead, kills it and returns err with the tail of
// its stderr, which usually says why.
func (p *process) fail(err error) error {
	p.kill()
	if tail := p.stderr.String(); tail != "" {
		err = fmt.Errorf("%w\n--- stderr tail of %s ---\n%s", err, p.spec.Name, tail)
	}
	p.dead = err
	return err
}

// close ends the testee: EOF on stdin asks it to exit; a testee that does
// not, within a second, is killed.
func (p *process) close() {
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
	select {
	case <-p.drained():
	case <-time.After(time.Second):
		p.kill()
	}
	if p.dead == nil {
		p.dead = errors.New("testee closed")
	}
}

// kill ends a testee that failed at once: it may be hung.
func (p *process) kill() {
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.drained():
	case <-time.After(2 * time.Second): // a child may hold stdout open
	}
	if p.dead == nil {
		p.dead = errors.New("testee killed")
	}
}

// drained closes once readLines has seen the testee exit.
func (p *process) drained() <-chan struct{} {
	p.drainOnce.Do(func() {
		p.drainDone = make(chan struct{})
		go func() {
			for range p.lines {
			}
			close(p.drainDone)
		}()
	})
	return p.drainDone
}

func decodeField(a answer, key string, v any) error {
	raw, ok := a[key]
	if !ok {
		return fmt.Errorf("answer has no %q", key)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("answer field %q: %w", key, err)
	}
	return nil
}

// tailBuffer keeps the last bytes written to it (a testee's stderr).
type tailBuffer struct {
	mu   sync.Mutex
	max  int
	data []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.data = append(t.data, b...)
	if len(t.data) > t.max {
		t.data = append(t.data[:0], t.data[len(t.data)-t.max:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.data)
}
