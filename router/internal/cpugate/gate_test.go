package cpugate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endless is a connection that always has bytes to read.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

// free counts the gate's free tokens (taking and giving them back).
func free(g *Gate) int {
	n := 0
	for g.TryAcquire() {
		n++
	}
	for range n {
		g.Release()
	}
	return n
}

func TestNewWantsATokenAtLeast(t *testing.T) {
	for _, n := range []int{0, -1} {
		_, err := New(n)
		assert.ErrorContains(t, err, "want 1 or more")
	}
	g, err := New(3)
	require.NoError(t, err)
	assert.Equal(t, 3, free(g))
}

// Readers between two reads and workers between Acquire and Release are
// never more than the tokens, and every one of them gets to work.
func TestReadersAndWorkersNeverOutnumberTheTokens(t *testing.T) {
	const tokens, readers, workers = 2, 6, 3
	g, err := New(tokens)
	require.NoError(t, err)
	var active, most atomic.Int32
	work := func() {
		n := active.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Microsecond)
		active.Add(-1)
	}
	ctx, stop := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer stop()
	done := make([]atomic.Int64, readers+workers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			r := g.NewLink(nil).NewReader(endless{})
			defer r.Close()
			buf := make([]byte, 16)
			for ctx.Err() == nil {
				_, _ = r.Read(buf)
				work()
				done[i].Add(1)
			}
		})
	}
	for i := range workers {
		wg.Go(func() {
			for g.Acquire(ctx.Done()) {
				work()
				done[readers+i].Add(1)
				g.Release()
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int32(tokens))
	assert.Equal(t, int32(tokens), most.Load(), "the tokens were all in use at times")
	for i := range done {
		assert.Positive(t, done[i].Load(), "goroutine %d never worked", i)
	}
	assert.Equal(t, tokens, free(g), "every token was given back")
}

// A consumer that waits frees its readers' tokens (so a worker that makes
// it room can run), and they take none until it resumes.
func TestAWaitingConsumerFreesItsReadersTokens(t *testing.T) {
	g, err := New(1)
	require.NoError(t, err)
	l := g.NewLink(nil)
	r := l.NewReader(endless{})
	buf := make([]byte, 8)
	_, _ = r.Read(buf)
	assert.Zero(t, free(g), "the reader holds the token after its read")

	resume := l.Wait()
	assert.Equal(t, 1, free(g), "given back when the consumer waits")
	_, _ = r.Read(buf)
	assert.Equal(t, 1, free(g), "none taken while the consumer waits")

	resume()
	_, _ = r.Read(buf)
	assert.Zero(t, free(g), "taken again once it resumed")
	r.Close()
	assert.Equal(t, 1, free(g), "Close gives it back")

	var none *Link
	none.Wait()() // no gate: nothing to do
}

// Close ends a reader's wait for a token (the connection closed while
// others held them all) and unlinks it.
func TestCloseEndsAWaitForAToken(t *testing.T) {
	g, err := New(1)
	require.NoError(t, err)
	require.True(t, g.TryAcquire())
	var waits atomic.Int32
	l := g.NewLink(func() { waits.Add(1) })
	r := l.NewReader(endless{})
	read := make(chan struct{})
	go func() {
		_, _ = r.Read(make([]byte, 8))
		close(read)
	}()
	select {
	case <-read:
		t.Fatal("the read went on without a token")
	case <-time.After(20 * time.Millisecond):
	}
	assert.Equal(t, int32(1), waits.Load(), "the wait was counted")
	r.Close()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the wait")
	}
	g.Release()
	assert.Equal(t, 1, free(g))
	l.mu.Lock()
	assert.Empty(t, l.readers)
	l.mu.Unlock()
}

// Waits, resumes, reads and closes racing each other never keep a token:
// once every reader is closed, all are free. (Run with -race.)
func TestRacingWaitsReadsAndClosesLoseNoToken(t *testing.T) {
	const tokens = 2
	g, err := New(tokens)
	require.NoError(t, err)
	for range 50 {
		l := g.NewLink(nil)
		var readers []*Reader
		for range 3 {
			readers = append(readers, l.NewReader(endless{}))
		}
		var wg sync.WaitGroup
		for _, r := range readers {
			wg.Go(func() {
				buf := make([]byte, 8)
				for range 50 {
					_, _ = r.Read(buf)
				}
			})
		}
		wg.Go(func() {
			for range 50 {
				l.Wait()()
			}
		})
		wg.Go(func() {
			time.Sleep(time.Duration(len(readers)) * 50 * time.Microsecond)
			readers[0].Close()
		})
		wg.Wait()
		for _, r := range readers {
			r.Close()
		}
		require.Equal(t, tokens, free(g))
	}
}

func TestTheLinkTravelsInAContext(t *testing.T) {
	g, err := New(1)
	require.NoError(t, err)
	l := g.NewLink(nil)
	assert.Same(t, l, LinkFrom(WithLink(t.Context(), l)))
	assert.Nil(t, LinkFrom(t.Context()))
}
