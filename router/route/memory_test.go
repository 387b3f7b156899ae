package route

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// The load of long prompts is memory given back once they end: freed or
// expired, a burst of routes leaves the heap about where it was (Go's
// maps keep the room of the most entries they held unless rebuilt). Each
// prompt is routed twice, as a conversation's turns share theirs.
func TestLoadMemoryIsGivenBack(t *testing.T) {
	for _, end := range []string{"freed", "expired"} {
		t.Run(end, func(t *testing.T) {
			f := newFixture(t, 4, Options{RequestTTL: time.Minute})
			before := heapInUse()
			const prompts, promptTokens = 64, 32 * 1024 // 8,192 blocks a route
			const routes = 2 * prompts
			for i := range routes {
				_, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(uint32(i%prompts*promptTokens), promptTokens), RequestID: fmt.Sprint(i)})
				require.NoError(t, err)
			}
			during := heapInUse()
			switch end {
			case "freed":
				for i := range routes {
					require.True(t, f.r.Free(fmt.Sprint(i)))
				}
			case "expired":
				f.clock.Advance(2 * time.Minute)
				assert.Equal(t, routes, f.r.Expire())
			}
			assert.Zero(t, f.r.Stats().ActiveRequests)
			after := heapInUse()
			t.Logf("heap: %d KiB before, %d KiB with the routes active, %d KiB after", before>>10, during>>10, after>>10)
			require.Greater(t, during, before+8<<20, "the routes' load takes memory")
			assert.Less(t, after, before+(during-before)/16, "almost all of it is given back")
			runtime.KeepAlive(f.r) // the router is alive after the burst, as in a server
		})
	}
}
