package logtest

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Concurrent loggers lose no line and interleave none (run with -race).
func TestBufferTakesConcurrentWriters(t *testing.T) {
	var buf Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	const writers, lines = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				log.Info("line", "writer", w, "i", i)
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	out := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	assert.Len(t, out, writers*lines)
	for _, l := range out {
		assert.Contains(t, l, "msg=line writer=", "a whole line: %q", l)
	}
	assert.Contains(t, buf.String(), fmt.Sprintf("writer=%d i=%d", writers-1, lines-1))
}
