package ingesttest_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// The peaks cover what was alive while sampling, after it is gone too.
func TestPeakMemorySeesAnAllocationThatIsGone(t *testing.T) {
	p := ingesttest.StartPeakMemory()
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i) // resident, not just reserved
	}
	time.Sleep(20 * time.Millisecond) // a few samples
	runtime.KeepAlive(big)
	big = nil
	runtime.GC()
	heap, rss := p.Stop()
	assert.GreaterOrEqual(t, heap, uint64(64<<20))
	assert.GreaterOrEqual(t, rss, uint64(64<<20), "Linux has /proc/self/statm")
}

// WaitConnected returns once the count is reached.
func TestWaitConnected(t *testing.T) {
	var n atomic.Int64
	go func() {
		time.Sleep(20 * time.Millisecond)
		n.Store(3)
	}()
	ingesttest.WaitConnected(t, n.Load, 3)
	assert.Equal(t, int64(3), n.Load())
}
