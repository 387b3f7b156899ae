package main

import (
	"fmt"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// differential runs the random cases through the reference, then through
// every other testee, which must answer exactly as the reference did. The
// first mismatch of each testee is shrunk to the smallest failing input.
func differential(ref *testeeRun, testees []*testeeRun, cases []diffCase, maxTrials int) map[string]*cell {
	cells := make(map[string]*cell, len(testees))
	if len(cases) == 0 {
		for _, t := range testees {
			cells[t.spec.Name] = &cell{Ref: t == ref}
		}
		return cells
	}
	var reqs []protocol.Request
	for _, c := range cases {
		reqs = append(reqs, c.requests()...)
	}
	want, err := ref.call(reqs)
	if err != nil {
		for _, t := range testees {
			cells[t.spec.Name] = &cell{Total: len(cases), Error: fmt.Sprintf("reference %s failed: %v", ref.spec.Name, err)}
		}
		return cells
	}
	checks := make([]check, len(cases))
	per := len(reqs) / len(cases)
	for i, c := range cases {
		checks[i] = check{Name: fmt.Sprintf("case %d", i), Reqs: c.requests(), Want: want[i*per : (i+1)*per]}
	}
	for _, t := range testees {
		if t == ref {
			cells[t.spec.Name] = &cell{Passed: len(cases), Total: len(cases), Ref: true}
			continue
		}
		c := t.runChecks(checks)
		if c.Failed > 0 && t.startErr == nil {
			if first := firstFailing(t, checks); first >= 0 {
				c.Smallest = shrinkCase(ref, t, cases[first], maxTrials)
			}
		}
		cells[t.spec.Name] = c
	}
	return cells
}

// firstFailing finds the first case that fails on its own (a crash fails
// every later case of a batch; the shrinker must start from a real one).
func firstFailing(t *testeeRun, checks []check) int {
	for i, ch := range checks {
		got, err := t.call(cloneReqs(ch.Reqs))
		if err != nil {
			return i
		}
		for j := range ch.Reqs {
			if compareAnswer(ch.Reqs[j].Op, ch.Want[j], got[j]) != "" {
				return i
			}
		}
	}
	return -1
}

func cloneReqs(reqs []protocol.Request) []protocol.Request {
	return append([]protocol.Request(nil), reqs...)
}
