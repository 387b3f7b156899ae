package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A slice growing past aheadMin has its next array made ahead, and the
// append that fills it moves into that array, keeping every element.
func TestAppendAheadTakesTheArrayMadeAhead(t *testing.T) {
	var s []run
	var next chan []run
	var prepared *run
	for i := 0; ; i++ {
		require.Less(t, i, 1<<20, "the slice never grew past %d", 2*aheadMin)
		c := cap(s)
		s = appendAhead(s, run{key: uint64(i)}, &next)
		if next != nil && prepared == nil {
			var a []run
			select {
			case a = <-next:
			case <-time.After(10 * time.Second):
				t.Fatal("the next array was never made")
			}
			require.Equal(t, 2*cap(s), len(a))
			prepared = &a[0]
			next <- a
		}
		if cap(s) != c && c >= aheadMin {
			require.NotNil(t, prepared, "the slice grew from %d without its next array asked for", c)
			require.Same(t, prepared, &s[0], "the append made its own array")
			require.Nil(t, next)
			for j := range s {
				require.Equal(t, uint64(j), s[j].key)
			}
			return
		}
	}
}
