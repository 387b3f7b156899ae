package main

import (
	"fmt"
	"time"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// maxStarts bounds restarts: a testee that crashes on every start would
// otherwise be restarted for every group.
const maxStarts = 5

// testeeRun is one testee across the rounds; its process is restarted
// after a crash so that one bad case does not fail every later group.
type testeeRun struct {
	spec        testeeSpec
	specVersion string // the spec version the testee must implement ("" = any)
	timeout     time.Duration
	proc        *process
	starts      int
	startErr    error
	hello       protocol.Hello
}

// ensure returns a live process, starting one if needed.
func (t *testeeRun) ensure() (*process, error) {
	if t.proc != nil && t.proc.dead == nil {
		return t.proc, nil
	}
	if t.startErr != nil {
		return nil, t.startErr
	}
	if err := t.spec.missing(); err != nil {
		t.startErr = err
		return nil, err
	}
	if t.starts >= maxStarts {
		t.startErr = fmt.Errorf("testee %s failed %d times; not restarted again; last failure: %w", t.spec.Name, t.starts, t.proc.dead)
		return nil, t.startErr
	}
	t.starts++
	p, err := startProcess(t.spec, t.timeout)
	if err != nil {
		t.startErr = err
		return nil, err
	}
	if t.specVersion != "" && p.hello.SpecVersion != t.specVersion {
		p.close()
		t.startErr = fmt.Errorf("testee %s implements spec %q, the vectors are spec %q", t.spec.Name, p.hello.SpecVersion, t.specVersion)
		return nil, t.startErr
	}
	t.proc = p
	t.hello = p.hello
	return p, nil
}

func (t *testeeRun) supports(op string) bool {
	for _, o := range t.hello.Ops {
		if o == op {
			return true
		}
	}
	return false
}

// call sends a batch to a live process; on failure the process is dead.
func (t *testeeRun) call(reqs []protocol.Request) ([]answer, error) {
	p, err := t.ensure()
	if err != nil {
		return nil, err
	}
	return p.callAll(reqs)
}

func (t *testeeRun) close() {
	if t.proc != nil && t.proc.dead == nil {
		t.proc.close()
	}
}

// runChecks runs checks through one testee in one batch and scores them.
func (t *testeeRun) runChecks(checks []check) *cell {
	c := &cell{}
	if _, err := t.ensure(); err != nil {
		c.Error = err.Error()
		for _, ch := range checks {
			if ch.Optional == "" {
				c.Total++
			}
		}
		return c
	}
	var live []check
	var reqs []protocol.Request
	for _, ch := range checks {
		if ch.Optional != "" && !t.supports(ch.Optional) {
			c.NA++
			continue
		}
		live = append(live, ch)
		reqs = append(reqs, ch.Reqs...)
	}
	c.Total = len(live)
	answers, err := t.call(reqs)
	if err != nil {
		c.Error = err.Error()
	}
	next := 0
	for _, ch := range live {
		reason, req, want, got := "", protocol.Request{}, answer(nil), answer(nil)
		for i := range ch.Reqs {
			if next+i >= len(answers) {
				reason, req = "not answered (see the error of this cell)", reqs[next+i]
				break
			}
			if r := compareAnswer(ch.Reqs[i].Op, ch.Want[i], answers[next+i]); r != "" {
				reason, req, want, got = r, reqs[next+i], ch.Want[i], answers[next+i]
				break
			}
		}
		next += len(ch.Reqs)
		if reason == "" {
			c.Passed++
			continue
		}
		f := failure{Case: ch.Name, Reason: reason, Request: showRequest(req)}
		if want != nil {
			f.Expected, f.Got = show(want), show(got)
		}
		c.fail(f)
	}
	return c
}
