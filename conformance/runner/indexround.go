package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"strings"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// indexRound runs the scripts through the index reference (the Go core),
// then through every other testee, whose results must equal the
// reference's step by step. exempt is the testee allowed to lack the index
// (the oracle, which has none); any other testee without it fails.
func indexRound(ref *testeeRun, rows []*testeeRun, scripts []script, exempt string, maxTrials int) map[string]*cell {
	cells := map[string]*cell{}
	total := 0
	for _, s := range scripts {
		total += len(s.Steps)
	}
	want, err := runScripts(ref, scripts)
	for _, t := range rows {
		name := t.spec.Name
		if name == exempt {
			if _, serr := t.ensure(); serr != nil {
				cells[name] = &cell{Error: serr.Error()}
				continue
			}
			if !t.supports(protocol.OpIndex) {
				cells[name] = &cell{NA: total}
				continue
			}
		}
		switch {
		case err != nil:
			cells[name] = &cell{Total: total, Error: fmt.Sprintf("index reference %s failed: %v", ref.spec.Name, err)}
		case t == ref:
			cells[name] = &cell{Passed: total, Total: total, Ref: true}
		default:
			cells[name] = compareScripts(ref, t, scripts, want, maxTrials)
		}
	}
	return cells
}

// runScripts sends one index request per script and returns the results
// of every step, script by script.
func runScripts(t *testeeRun, scripts []script) ([][]json.RawMessage, error) {
	if _, err := t.ensure(); err != nil {
		return nil, err
	}
	if !t.supports(protocol.OpIndex) {
		return nil, fmt.Errorf("testee %s does not serve the %q op", t.spec.Name, protocol.OpIndex)
	}
	reqs := make([]protocol.Request, len(scripts))
	for i, s := range scripts {
		reqs[i] = protocol.Request{Op: protocol.OpIndex, Mode: s.Mode, Steps: s.Steps}
	}
	answers, err := t.call(reqs)
	if err != nil {
		return nil, err
	}
	out := make([][]json.RawMessage, len(scripts))
	for i, a := range answers {
		if msg, ok := a["error"]; ok {
			return nil, fmt.Errorf("script %d (%s mode): error answer %s", i, scripts[i].Mode, msg)
		}
		if err := decodeField(a, "results", &out[i]); err != nil {
			return nil, fmt.Errorf("script %d: %w", i, err)
		}
		if len(out[i]) != len(scripts[i].Steps) {
			return nil, fmt.Errorf("script %d: %d results for %d steps", i, len(out[i]), len(scripts[i].Steps))
		}
	}
	return out, nil
}

func compareScripts(ref, t *testeeRun, scripts []script, want [][]json.RawMessage, maxTrials int) *cell {
	c := &cell{}
	for _, s := range scripts {
		c.Total += len(s.Steps)
	}
	got, err := runScripts(t, scripts)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	firstScript, firstStep := -1, -1
	for i, s := range scripts {
		for j, step := range s.Steps {
			why := compareStep(want[i][j], got[i][j])
			if why == "" {
				c.Passed++
				continue
			}
			if firstScript < 0 {
				firstScript, firstStep = i, j
			}
			c.fail(failure{
				Case:     fmt.Sprintf("script %d (%s) step %d", i, s.Mode, j),
				Reason:   why,
				Request:  showStep(step),
				Expected: string(want[i][j]),
				Got:      string(got[i][j]),
			})
		}
	}
	if firstScript >= 0 {
		s := scripts[firstScript]
		c.Smallest = shrinkScript(ref, t, script{Mode: s.Mode, Steps: s.Steps[:firstStep+1]}, maxTrials)
	}
	return c
}

// stepResult is a step result as compared: an outcome, scores or stats.
type stepResult struct {
	OK     bool              `json:"ok"`
	Error  string            `json:"error"`
	Scores *[]protocol.Match `json:"scores"`
	Stats  json.RawMessage   `json:"stats"`
	Events *[]string         `json:"events"`
}

// compareStep returns "" when two step results agree. Error messages are
// the bindings' own; only the error kind must agree.
func compareStep(want, got json.RawMessage) string {
	var w, g stepResult
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Sprintf("reference result unreadable: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Sprintf("result unreadable (u64 must be decimal strings): %v", err)
	}
	switch {
	case w.Error != g.Error:
		return fmt.Sprintf("outcome: expected %s, got %s", outcome(w), outcome(g))
	case w.Error != "":
		return ""
	case w.OK != g.OK:
		return fmt.Sprintf("outcome: expected %s, got %s", outcome(w), outcome(g))
	case (w.Scores == nil) != (g.Scores == nil):
		return "find_matches: scores missing"
	case w.Scores != nil && !reflect.DeepEqual(normScores(*w.Scores), normScores(*g.Scores)):
		return "find_matches: scores differ"
	case (w.Stats == nil) != (g.Stats == nil):
		return "stats missing"
	case w.Stats != nil && !sameJSON(w.Stats, g.Stats):
		return "stats differ"
	case (w.Events == nil) != (g.Events == nil):
		return "dump: events missing"
	case w.Events != nil:
		return compareEvents(*w.Events, *g.Events)
	}
	return ""
}

// compareEvents compares dumps event by event, in order: a dump is
// deterministic, so every binding must pass the same events through.
func compareEvents(want, got []string) string {
	w, err := canonicalEvents(want)
	if err != nil {
		return "reference dump unreadable: " + err.Error()
	}
	g, err := canonicalEvents(got)
	if err != nil {
		return "dump: " + err.Error()
	}
	if len(w) != len(g) {
		return fmt.Sprintf("dump: expected %d events, got %d", len(w), len(g))
	}
	for i := range w {
		if w[i] != g[i] {
			return fmt.Sprintf("dump: expected event %s, got %s", w[i], g[i])
		}
	}
	return ""
}

// canonicalEvents re-encodes each event with sorted keys and exact
// numbers, so that bindings may differ in spacing and key order only.
func canonicalEvents(events []string) ([]string, error) {
	out := make([]string, len(events))
	for i, e := range events {
		var v any
		d := json.NewDecoder(strings.NewReader(e))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("event %d is not JSON: %v", i, err)
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[i] = string(data)
	}
	return out, nil
}

func outcome(r stepResult) string {
	switch {
	case r.Error != "":
		return "error " + r.Error
	case r.OK:
		return "ok"
	case r.Scores != nil:
		return "scores"
	case r.Stats != nil:
		return "stats"
	case r.Events != nil:
		return "events"
	}
	return "nothing"
}

// normScores sorts scores by (worker id, dp rank): the protocol lets a
// testee list them in the binding's own order.
func normScores(m []protocol.Match) []protocol.Match {
	out := append([]protocol.Match{}, m...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].WorkerID != out[j].WorkerID {
			return out[i].WorkerID < out[j].WorkerID
		}
		return out[i].DPRank < out[j].DPRank
	})
	return out
}

// sameJSON compares two JSON texts as values (key order and spacing do
// not matter; numbers compare as their exact text).
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func showStep(s protocol.Step) string {
	data, _ := json.Marshal(s)
	return string(data)
}
