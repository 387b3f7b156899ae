package benchalt

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var sink []byte

func TestRunReportsBothSides(t *testing.T) {
	// A few hundred calls, not a second's worth: the figures, not the
	// time, are what this checks.
	require.NoError(t, flag.Set("test.benchtime", "200x"))
	calls := map[string]int{}
	res := testing.Benchmark(func(b *testing.B) {
		calls = map[string]int{}
		Run(b, func() {
			calls["new"]++
			sink = make([]byte, 1024)
		}, func() {
			calls["old"]++
		})
	})
	require.Positive(t, res.N)
	assert.Equal(t, calls["new"], calls["old"], "as many calls each")
	for _, m := range []string{"new-ns/op", "old-ns/op", "new/old"} {
		assert.Contains(t, res.Extra, m)
	}
	assert.InDelta(t, 1024, res.Extra["new-B/op"], 64)
	assert.Equal(t, 1.0, res.Extra["new-allocs/op"])
	assert.Zero(t, res.Extra["old-B/op"])
	assert.Zero(t, res.Extra["old-allocs/op"])
}
