package main

import (
	"encoding/json"
	"fmt"
)

// shrinkScript minimizes a failing index script (delta debugging): it
// removes chunks of steps, halving the chunk size, and keeps any shorter
// script on which the testee still disagrees with the reference. The last
// step (the first disagreement) is never removed.
func shrinkScript(ref, t *testeeRun, s script, maxTrials int) *shrunk {
	res := &shrunk{}
	best := s
	why, want, got := scriptMismatch(ref, t, best)
	if why == "" {
		return nil
	}
	for chunk := (len(best.Steps) - 1) / 2; chunk >= 1 && res.Trials < maxTrials; {
		removed := false
		for start := 0; start+chunk <= len(best.Steps)-1 && res.Trials < maxTrials; {
			cand := script{Mode: best.Mode}
			cand.Steps = append(append(cand.Steps, best.Steps[:start]...), best.Steps[start+chunk:]...)
			res.Trials++
			if w, cw, cg := scriptMismatch(ref, t, cand); w != "" {
				best, why, want, got = cand, w, cw, cg
				removed = true
				continue // same start: the next chunk slid into place
			}
			start += chunk
		}
		if !removed {
			chunk /= 2
		}
	}
	res.Reason = fmt.Sprintf("%s mode, %d steps: %s", best.Mode, len(best.Steps), why)
	for i, step := range best.Steps {
		res.Requests = append(res.Requests, showStep(step))
		if i < len(want) {
			res.Expected = append(res.Expected, string(want[i]))
		}
		if i < len(got) {
			res.Got = append(res.Got, string(got[i]))
		}
	}
	return res
}

// scriptMismatch runs one script on both and says where they differ.
func scriptMismatch(ref, t *testeeRun, s script) (string, []json.RawMessage, []json.RawMessage) {
	want, err := runScripts(ref, []script{s})
	if err != nil {
		return "", nil, nil // the reference cannot judge this script
	}
	got, err := runScripts(t, []script{s})
	if err != nil {
		if t.startErr != nil {
			return "", nil, nil // it no longer starts: nothing left to learn
		}
		return err.Error(), want[0], nil
	}
	for i := range s.Steps {
		if why := compareStep(want[0][i], got[0][i]); why != "" {
			return fmt.Sprintf("step %d: %s", i, why), want[0], got[0]
		}
	}
	return "", want[0], got[0]
}
