package ingesttest

import (
	"bufio"
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// WaitConnected waits (up to 10 s) until connected reports n streams,
// then a moment more for the subscriptions to reach the publishers: a
// SUB socket misses what its PUB sent before then.
func WaitConnected(tb testing.TB, connected func() int64, n int) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); connected() < int64(n); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d engines connected", connected(), n)
		}
	}
	time.Sleep(300 * time.Millisecond)
}

// PeakMemory samples the Go heap's live objects and the process's
// resident set every millisecond until Stop, keeping the peaks (the
// burst benchmarks' memory figures).
type PeakMemory struct {
	heap, rss atomic.Uint64
	stop      chan struct{}
	done      sync.WaitGroup
}

// StartPeakMemory starts sampling.
func StartPeakMemory() *PeakMemory {
	p := &PeakMemory{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		for {
			metrics.Read(sample)
			p.heap.Store(max(p.heap.Load(), sample[0].Value.Uint64()))
			p.rss.Store(max(p.rss.Load(), residentBytes()))
			select {
			case <-p.stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return p
}

// Stop ends the sampling and returns the peak heap and resident set in
// bytes (the resident set is 0 where /proc/self/statm is not).
func (p *PeakMemory) Stop() (heap, rss uint64) {
	close(p.stop)
	p.done.Wait()
	return p.heap.Load(), p.rss.Load()
}

// residentBytes is the process's resident set from /proc/self/statm.
func residentBytes() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Split(bufio.ScanWords)
	sc.Scan()
	if !sc.Scan() {
		return 0
	}
	pages, err := strconv.ParseUint(sc.Text(), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
