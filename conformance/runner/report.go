package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Column names of the two generated rounds, after the vector groups.
const (
	colDifferential = "differential"
	colIndex        = "index"
)

// testeeReport is one row of the matrix.
type testeeReport struct {
	Name           string           `json:"name"`
	Command        []string         `json:"command"`
	Binding        string           `json:"binding,omitempty"`
	LibraryVersion string           `json:"library_version,omitempty"`
	SpecVersion    string           `json:"spec_version,omitempty"`
	Ops            []string         `json:"ops,omitempty"`
	Cells          map[string]*cell `json:"cells"`
}

// report is build/conformance-report.json.
type report struct {
	OK      bool           `json:"ok"`
	Spec    string         `json:"spec"`
	Seed    uint64         `json:"seed"`
	Cases   int            `json:"cases"`
	Columns []string       `json:"columns"`
	Testees []testeeReport `json:"testees"`
}

func (r *report) computeOK() {
	r.OK = len(r.Testees) > 0
	for _, t := range r.Testees {
		for _, col := range r.Columns {
			if c := t.Cells[col]; c == nil || !c.ok() {
				r.OK = false
			}
		}
	}
}

// counts adds up the cases of every cell: passed, and failed (a case that
// did not pass, or a whole cell that failed before any case ran).
func (r *report) counts() (passed, failed int) {
	for _, t := range r.Testees {
		for _, col := range r.Columns {
			c := t.Cells[col]
			switch {
			case c == nil:
				failed++
			case c.Passed < c.Total:
				passed += c.Passed
				failed += c.Total - c.Passed
			case !c.ok():
				passed += c.Passed
				failed++
			default:
				passed += c.Passed
			}
		}
	}
	return passed, failed
}

// cellText is what the matrix shows: passed/total, "n/a", "ref" for the
// reference of a round, and a FAIL mark that cannot be missed.
func cellText(c *cell) string {
	switch {
	case c == nil:
		return "-"
	case c.Error != "" && c.Passed == 0 && c.Total > 0 && c.Failed == 0:
		return "FAIL"
	case c.Total == 0 && c.NA > 0 && c.Error == "":
		return "n/a"
	}
	s := fmt.Sprintf("%d/%d", c.Passed, c.Total)
	if c.Ref {
		s += " ref"
	}
	if c.NA > 0 {
		s += fmt.Sprintf(" +%d n/a", c.NA)
	}
	if !c.ok() {
		s += " FAIL"
	}
	return s
}

func printMatrix(w io.Writer, r *report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "testee")
	for _, col := range r.Columns {
		fmt.Fprintf(tw, "\t%s", col)
	}
	fmt.Fprintln(tw)
	for _, t := range r.Testees {
		fmt.Fprint(tw, t.Name)
		for _, col := range r.Columns {
			fmt.Fprintf(tw, "\t%s", cellText(t.Cells[col]))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "(n/a: the testee does not serve the op the cases need (raw_hash is optional; the oracle has no index);"+
		" ref: the round's reference, the others are compared with it)")
}

// printFailures is how many failing cases of a cell are printed; the
// report keeps maxFailures, and the shrunk input says the most.
const printFailures = 2

// printFailureDetails explains every failing cell: the cell error, the first
// failing cases and the smallest failing input.
func printFailureDetails(w io.Writer, r *report) {
	for _, t := range r.Testees {
		for _, col := range r.Columns {
			c := t.Cells[col]
			if c == nil || c.ok() {
				continue
			}
			fmt.Fprintf(w, "\nFAIL %s / %s: %d of %d failed\n", t.Name, col, max(c.Failed, c.Total-c.Passed), c.Total)
			if c.Error != "" {
				fmt.Fprintf(w, "  error: %s\n", indent(c.Error))
			}
			for i, f := range c.Failures {
				if i == printFailures {
					break
				}
				fmt.Fprintf(w, "  case %s: %s\n", f.Case, f.Reason)
				if f.Request != "" {
					fmt.Fprintf(w, "    request:  %s\n", clip(f.Request))
				}
				if f.Expected != "" || f.Got != "" {
					fmt.Fprintf(w, "    expected: %s\n    got:      %s\n", clip(f.Expected), clip(f.Got))
				}
			}
			if shown := min(len(c.Failures), printFailures); c.Failed > shown {
				fmt.Fprintf(w, "  ... and %d more failing cases (see the report)\n", c.Failed-shown)
			}
			if s := c.Smallest; s != nil {
				fmt.Fprintf(w, "  smallest failing input (%d shrink trials): %s\n", s.Trials, s.Reason)
				for i, req := range s.Requests {
					fmt.Fprintf(w, "    request:  %s\n", clip(req))
					if i < len(s.Expected) {
						fmt.Fprintf(w, "    expected: %s\n", clip(s.Expected[i]))
					}
					if i < len(s.Got) {
						fmt.Fprintf(w, "    got:      %s\n", clip(s.Got[i]))
					}
				}
			}
		}
	}
}

func indent(s string) string { return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") }

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

func writeReport(path string, r *report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report dir: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
