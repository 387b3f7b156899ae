package main

// maxFailures bounds the failures kept per cell: the first ones say what
// is wrong; thousands more only bury them.
const maxFailures = 5

// failure is one failing case, readable on its own.
type failure struct {
	Case     string `json:"case"`
	Reason   string `json:"reason"`
	Request  string `json:"request,omitempty"`
	Expected string `json:"expected,omitempty"`
	Got      string `json:"got,omitempty"`
}

// cell is one testee's result for one column (a vector group, the
// differential round or the index round).
type cell struct {
	Passed int `json:"passed"`
	Total  int `json:"total"` // cases that apply; n/a cases are not counted
	NA     int `json:"na"`
	Failed int `json:"failed"`
	// Ref marks the reference of a round: it is compared with itself.
	Ref bool `json:"reference,omitempty"`
	// Error is a failure of the whole cell: missing testee, crash, timeout.
	Error    string    `json:"error,omitempty"`
	Failures []failure `json:"failures,omitempty"`
	// Smallest is the smallest failing input the shrinker found.
	Smallest *shrunk `json:"smallest_failing_input,omitempty"`
}

// shrunk is a minimized failing input with both answers.
type shrunk struct {
	Requests []string `json:"requests"`
	Expected []string `json:"expected"`
	Got      []string `json:"got"`
	Reason   string   `json:"reason"`
	Trials   int      `json:"trials"`
}

func (c *cell) fail(f failure) {
	c.Failed++
	if len(c.Failures) < maxFailures {
		c.Failures = append(c.Failures, f)
	}
}

// ok tells whether the cell passed: every applicable case passed and
// nothing failed as a whole. An all-n/a cell is not a failure.
func (c *cell) ok() bool {
	return c.Error == "" && c.Failed == 0 && c.Passed == c.Total
}
