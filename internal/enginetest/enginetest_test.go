package enginetest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFreePortsAreConsecutiveAndBindable(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			base := FreePorts(t, n)
			for i := range n {
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
				require.NoError(t, err, "port %d of the run", i)
				require.NoError(t, l.Close())
			}
			assert.Equal(t, fmt.Sprintf("tcp://127.0.0.1:%d", base), TCP(base))
		})
	}
}

// Send merges its fields into the command: seqs count up, and a given
// seq restarts the count as an engine restart does.
func TestPublisherNumbersItsBatches(t *testing.T) {
	p := StartPublisher(t)
	p.Do(map[string]any{"op": "open", "name": "e", "endpoint": TCP(FreePorts(t, 1))})
	var seqs []uint64
	for _, fields := range []map[string]any{
		{"skip": true},
		{"skip": true},
		{"skip": true, "seq": 7},
		{"skip": true},
	} {
		seqs = append(seqs, p.Send("e", fields))
	}
	assert.Equal(t, []uint64{0, 1, 7, 8}, seqs)
}

// A kvmock fed prompts publishes on the endpoint returned.
func TestKVMockPublishes(t *testing.T) {
	ep := StartKVMock(t, KVMock{HashAlgo: "sha256", HashSeed: "0", BlockSize: 4, PromptBlocks: 2})
	require.True(t, strings.HasPrefix(ep, "tcp://127.0.0.1:"), ep)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	require.NoError(t, sub.Dial(ep))
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, ""))
	msg, err := sub.Recv() // a PUB drops what it sent before the subscription; prompts keep coming
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(msg.Frames), 3, "topic, seq, payload")
}
