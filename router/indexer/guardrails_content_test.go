package indexer

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvhash/kvhash/core"
)

// Which enforced violations restart a quarantined rank's settle clock:
// only those a clear and a partial rebuild cannot produce.
func TestContentViolation(t *testing.T) {
	w := core.Worker{ID: 1}
	se := func(k core.Violation) error {
		return &core.StabilityError{Kind: k, Worker: w, Enforced: true}
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"hash mismatch", se(core.ViolationHashMismatch), true},
		{"self reference", se(core.ViolationSelfReference), true},
		{"name reused", se(core.ViolationNameReused), true},
		{"parent not found", se(core.ViolationParentNotFound), false},
		{"block not found", se(core.ViolationBlockNotFound), false},
		{"joined, one content kind", errors.Join(se(core.ViolationBlockNotFound), se(core.ViolationNameReused)), true},
		{"not a stability error", errors.New("x"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, contentViolation(tc.err))
		})
	}
}
