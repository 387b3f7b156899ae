package kvmock

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// loopbackAny binds a random loopback port (the "*" makes kvmock bind, as
// vLLM does).
const loopbackAny = "tcp://127.0.0.1:*"

func publisherConfig(format EventFormat, hashes HashFormat, shape ReplayShape) Config {
	cfg := testConfig()
	cfg.EventsEndpoint = loopbackAny
	cfg.ReplayEndpoint = loopbackAny
	cfg.Topic = "kv@mock"
	cfg.EventFormat, cfg.HashFormat, cfg.ReplayShape = format, hashes, shape
	cfg.StepInterval = time.Millisecond
	return cfg
}

func startPublisher(t *testing.T, cfg Config) *Publisher {
	t.Helper()
	p, err := NewPublisher(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// subscribe connects a real SUB socket and waits until the publisher sees
// its subscription (a PUB drops what it sends before that).
func subscribe(t *testing.T, p *Publisher, topic string) zmq4.Socket {
	t.Helper()
	sub := zmq4.NewSub(context.Background(), zmq4.WithLogger(discardLogger()))
	t.Cleanup(func() { _ = sub.Close() })
	require.NoError(t, sub.Dial("tcp://"+p.EventsAddr().String()))
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, topic))
	require.Eventually(t, p.Subscribed, 5*time.Second, time.Millisecond)
	return sub
}

// recvWithin receives one message or fails the test after d.
func recvWithin(t *testing.T, s zmq4.Socket, d time.Duration) zmq4.Msg {
	t.Helper()
	got := make(chan zmq4.Msg, 1)
	errs := make(chan error, 1)
	go func() {
		m, err := s.Recv()
		if err != nil {
			errs <- err
			return
		}
		got <- m
	}()
	select {
	case m := <-got:
		return m
	case err := <-errs:
		require.NoError(t, err)
	case <-time.After(d):
		require.FailNow(t, "no message within "+d.String())
	}
	return zmq4.Msg{}
}

// decodedBatch is a batch decoded with plain MessagePack, no kvmock code.
type decodedBatch struct {
	ts     float64
	events []any
	rank   any
}

func decodeBatch(t *testing.T, payload []byte) decodedBatch {
	t.Helper()
	var raw []any
	require.NoError(t, msgpack.Unmarshal(payload, &raw))
	require.Len(t, raw, 3, "[ts, events, data_parallel_rank]")
	ts, ok := raw[0].(float64)
	require.True(t, ok, "ts is a float64, got %T", raw[0])
	events, ok := raw[1].([]any)
	require.True(t, ok)
	return decodedBatch{ts: ts, events: events, rank: raw[2]}
}

// eventFields turns either event layout into tag + named fields, the
// names being vLLM's positional order.
func eventFields(t *testing.T, ev any) (string, map[string]any) {
	t.Helper()
	order := map[string][]string{
		"BlockStored":      {"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"},
		"BlockRemoved":     {"block_hashes", "medium"},
		"AllBlocksCleared": {},
	}
	switch e := ev.(type) {
	case map[string]any:
		tag, _ := e["type"].(string)
		require.Contains(t, order, tag)
		fields := map[string]any{}
		for k, v := range e {
			if k != "type" {
				fields[k] = v
			}
		}
		require.Len(t, fields, len(order[tag]), "map %s: exactly vLLM's non-default fields", tag)
		return tag, fields
	case []any:
		require.NotEmpty(t, e)
		tag, _ := e[0].(string)
		require.Contains(t, order, tag)
		// msgspec writes every field of an array_like struct, defaults too.
		arrayTail := map[string]int{"BlockStored": 4, "BlockRemoved": 1, "AllBlocksCleared": 0}
		require.Len(t, e, 1+len(order[tag])+arrayTail[tag], "array %s: every field of vLLM's struct", tag)
		for _, v := range e[1+len(order[tag]):] {
			require.Nil(t, v, "defaulted fields are nil")
		}
		fields := map[string]any{}
		for i, name := range order[tag] {
			fields[name] = e[1+i]
		}
		return tag, fields
	}
	require.FailNow(t, fmt.Sprintf("event is neither map nor array: %T", ev))
	return "", nil
}

// wireHash reads a hash as a router does: ints as u64, bytes as their
// last 8 bytes big-endian.
func wireHash(t *testing.T, v any) uint64 {
	t.Helper()
	switch h := v.(type) {
	case []byte:
		require.Len(t, h, 32, "a bytes hash is the whole sha256 digest")
		return binary.BigEndian.Uint64(h[24:])
	default:
		return toU64(t, v)
	}
}

func toU64(t *testing.T, v any) uint64 {
	t.Helper()
	switch n := v.(type) {
	case int8:
		return uint64(n)
	case int16:
		return uint64(n)
	case int32:
		return uint64(n)
	case int64:
		return uint64(n)
	case uint8:
		return uint64(n)
	case uint16:
		return uint64(n)
	case uint32:
		return uint64(n)
	case uint64:
		return n
	}
	require.FailNow(t, fmt.Sprintf("not an integer: %T", v))
	return 0
}

func TestPublisherWireFormats(t *testing.T) {
	// The first digest's wire id has its top bit set: an int hash needs the full u64.
	stored := Event{Kind: EventBlockStored, Digests: []Digest{mkDigest(1, 0xF0), mkDigest(2, 0)}, Parent: ptr(digests(0x77)[0]), Tokens: seqTokens(300, 8)}
	removed := Event{Kind: EventBlockRemoved, Digests: digests(2)}
	cleared := Event{Kind: EventAllBlocksCleared}

	for _, format := range []EventFormat{EventFormatMap, EventFormatArray} {
		for _, hashes := range []HashFormat{HashFormatInt, HashFormatBytes} {
			t.Run(fmt.Sprintf("%s/%s", format, hashes), func(t *testing.T) {
				p := startPublisher(t, publisherConfig(format, hashes, ReplayShape4))
				sub := subscribe(t, p, "kv@")
				before := float64(time.Now().UnixNano()) / 1e9

				p.Emit(stored)
				p.Emit(removed)
				p.Emit(cleared)
				msg := recvWithin(t, sub, 5*time.Second)

				require.Len(t, msg.Frames, 3, "topic, seq, payload")
				assert.Equal(t, "kv@mock", string(msg.Frames[0]))
				assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 0}, msg.Frames[1], "the first batch is seq 0, 8 bytes big-endian")
				b := decodeBatch(t, msg.Frames[2])
				assert.GreaterOrEqual(t, b.ts, before-1)
				assert.Equal(t, uint64(0), toU64(t, b.rank))
				require.Len(t, b.events, 3, "one step's events in one batch")

				tag, f := eventFields(t, b.events[0])
				assert.Equal(t, "BlockStored", tag)
				hashes := f["block_hashes"].([]any)
				require.Len(t, hashes, 2)
				assert.Equal(t, WireID(stored.Digests[0]), wireHash(t, hashes[0]))
				assert.Equal(t, WireID(stored.Digests[1]), wireHash(t, hashes[1]))
				assert.Equal(t, WireID(*stored.Parent), wireHash(t, f["parent_block_hash"]))
				toks := f["token_ids"].([]any)
				require.Len(t, toks, 8)
				assert.Equal(t, uint64(307), toU64(t, toks[7]))
				assert.Equal(t, uint64(4), toU64(t, f["block_size"]))
				assert.Nil(t, f["lora_id"])
				assert.Equal(t, "GPU", f["medium"])
				assert.Nil(t, f["lora_name"])

				tag, f = eventFields(t, b.events[1])
				assert.Equal(t, "BlockRemoved", tag)
				assert.Equal(t, WireID(removed.Digests[0]), wireHash(t, f["block_hashes"].([]any)[0]))
				assert.Equal(t, "GPU", f["medium"])

				tag, _ = eventFields(t, b.events[2])
				assert.Equal(t, "AllBlocksCleared", tag)

				// The next step's batch is seq 1.
				p.Emit(removed)
				msg = recvWithin(t, sub, 5*time.Second)
				assert.Equal(t, uint64(1), binary.BigEndian.Uint64(msg.Frames[1]))
			})
		}
	}
}

func TestPublisherRootParentIsNil(t *testing.T) {
	p := startPublisher(t, publisherConfig(EventFormatMap, HashFormatInt, ReplayShape4))
	sub := subscribe(t, p, "")
	p.Emit(Event{Kind: EventBlockStored, Digests: digests(1), Tokens: seqTokens(1, 4)})
	b := decodeBatch(t, recvWithin(t, sub, 5*time.Second).Frames[2])
	_, f := eventFields(t, b.events[0])
	v, present := f["parent_block_hash"]
	assert.True(t, present, "parent_block_hash has no default: always written")
	assert.Nil(t, v)
}

// replayAll asks the replay endpoint for every batch from start and
// returns the replies up to (not including) the end marker.
func replayAll(t *testing.T, p *Publisher, start uint64) [][][]byte {
	t.Helper()
	d := zmq4.NewDealer(context.Background(), zmq4.WithLogger(discardLogger()))
	defer d.Close()
	require.NoError(t, d.Dial("tcp://"+p.ReplayAddr().String()))
	seq := make([]byte, 8)
	binary.BigEndian.PutUint64(seq, start)
	require.NoError(t, d.SendMulti(zmq4.NewMsgFrom([]byte{}, seq)))
	var out [][][]byte
	for {
		m := recvWithin(t, d, 5*time.Second)
		last := m.Frames[len(m.Frames)-2]
		if string(last) == string(endSeq) {
			out = append(out, m.Frames) // the end marker, for the caller to check
			return out
		}
		out = append(out, m.Frames)
	}
}

func TestReplayBothShapes(t *testing.T) {
	for _, shape := range []ReplayShape{ReplayShape4, ReplayShape3} {
		t.Run(string(shape), func(t *testing.T) {
			cfg := publisherConfig(EventFormatMap, HashFormatInt, shape)
			cfg.ReplayBuffer = 3
			p := startPublisher(t, cfg)
			sub := subscribe(t, p, "")
			live := map[uint64][]byte{}
			for i := range 5 {
				p.Emit(Event{Kind: EventBlockRemoved, Digests: digests(byte(i))})
				m := recvWithin(t, sub, 5*time.Second)
				live[binary.BigEndian.Uint64(m.Frames[1])] = m.Frames[2]
			}
			require.Len(t, live, 5)

			replies := replayAll(t, p, 1)
			require.Len(t, replies, 4, "the buffer keeps the last 3 batches (seq 2, 3, 4), then the end marker")
			for i, fr := range replies[:3] {
				wantSeq := uint64(2 + i)
				if shape == ReplayShape4 {
					require.Len(t, fr, 4)
					assert.Empty(t, fr[0])
					assert.Equal(t, "kv@mock", string(fr[1]))
					fr = fr[1:]
				} else {
					require.Len(t, fr, 3)
					assert.Empty(t, fr[0])
				}
				assert.Equal(t, wantSeq, binary.BigEndian.Uint64(fr[1]))
				assert.Equal(t, live[wantSeq], fr[2], "replayed bytes equal the published ones")
			}
			end := replies[3]
			if shape == ReplayShape4 {
				assert.Equal(t, [][]byte{{}, {}, endSeq, {}}, end)
			} else {
				assert.Equal(t, [][]byte{{}, endSeq, {}}, end)
			}

			beyond := replayAll(t, p, 99)
			assert.Len(t, beyond, 1, "nothing buffered from seq 99: just the end marker")
			assert.Equal(t, uint64(5), p.NextSeq())
		})
	}
}

func TestPublisherConnectsToABoundSubscriber(t *testing.T) {
	// A router may bind one endpoint and let engines connect (llm-d does):
	// an endpoint without "*" makes kvmock connect, as vLLM does.
	sub := zmq4.NewSub(context.Background(), zmq4.WithLogger(discardLogger()))
	defer sub.Close()
	require.NoError(t, sub.Listen("tcp://127.0.0.1:0"))
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, ""))

	cfg := publisherConfig(EventFormatArray, HashFormatInt, ReplayShape4)
	cfg.EventsEndpoint = "tcp://" + sub.Addr().String()
	cfg.ReplayEndpoint = ""
	p := startPublisher(t, cfg)
	assert.Nil(t, p.EventsAddr(), "a connecting publisher listens on nothing")
	require.Eventually(t, p.Subscribed, 5*time.Second, time.Millisecond)
	p.Emit(Event{Kind: EventAllBlocksCleared})
	m := recvWithin(t, sub, 5*time.Second)
	tag, _ := eventFields(t, decodeBatch(t, m.Frames[2]).events[0])
	assert.Equal(t, "AllBlocksCleared", tag)
}

func TestReplayIgnoresMalformedRequests(t *testing.T) {
	p := startPublisher(t, publisherConfig(EventFormatMap, HashFormatInt, ReplayShape4))
	d := zmq4.NewDealer(context.Background(), zmq4.WithLogger(discardLogger()))
	defer d.Close()
	require.NoError(t, d.Dial("tcp://"+p.ReplayAddr().String()))
	for _, bad := range []zmq4.Msg{
		zmq4.NewMsgFrom([]byte{}, []byte{1, 2, 3}),           // a short seq
		zmq4.NewMsgFrom([]byte("x"), make([]byte, 8)),        // no empty delimiter
		zmq4.NewMsgFrom([]byte{}, make([]byte, 8), []byte{}), // one frame too many
	} {
		require.NoError(t, d.SendMulti(bad))
	}
	// The endpoint still answers a good request...
	replies := replayAll(t, p, 0)
	assert.Len(t, replies, 1, "nothing buffered: the end marker alone")
	// ...and sent the bad ones nothing.
	got := make(chan zmq4.Msg, 1)
	go func() {
		if m, err := d.Recv(); err == nil {
			got <- m
		}
	}()
	select {
	case m := <-got:
		assert.Failf(t, "a malformed request was answered", "%q", m.Frames)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestBindsEndpoint(t *testing.T) {
	tests := []struct {
		ep   string
		bind bool
	}{
		{"tcp://*:5557", true},
		{"tcp://[::]:5557", true},
		{"ipc:///tmp/kv", true},
		{"inproc://kv", true},
		{"tcp://10.0.0.1:5557", false},
		{"tcp://router:5557", false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.bind, bindsEndpoint(tc.ep), tc.ep)
	}
}

func TestConnectingPublisherReconnectsAfterTheRouterRestarts(t *testing.T) {
	listen := func(addr string) zmq4.Socket {
		sub := zmq4.NewSub(context.Background(), zmq4.WithLogger(discardLogger()))
		require.NoError(t, sub.Listen(addr))
		require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, ""))
		return sub
	}
	first := listen("tcp://127.0.0.1:0")
	addr := first.Addr().String()
	cfg := publisherConfig(EventFormatMap, HashFormatInt, ReplayShape4)
	cfg.EventsEndpoint, cfg.ReplayEndpoint = "tcp://"+addr, ""
	p := startPublisher(t, cfg)
	require.Eventually(t, p.Subscribed, 5*time.Second, time.Millisecond)
	p.Emit(Event{Kind: EventAllBlocksCleared})
	assert.Equal(t, uint64(0), binary.BigEndian.Uint64(recvWithin(t, first, 5*time.Second).Frames[1]))

	require.NoError(t, first.Close()) // the router goes away...
	require.Eventually(t, func() bool { return !p.Subscribed() }, 5*time.Second, time.Millisecond)
	p.Emit(Event{Kind: EventAllBlocksCleared}) // seq 1: nobody listens, dropped

	second := listen("tcp://" + addr) // ...and comes back on the same endpoint
	defer second.Close()
	require.Eventually(t, p.Subscribed, 10*time.Second, 5*time.Millisecond, "the publisher redials")
	p.Emit(Event{Kind: EventAllBlocksCleared})
	assert.Equal(t, uint64(2), binary.BigEndian.Uint64(recvWithin(t, second, 5*time.Second).Frames[1]),
		"the seq runs on: the router sees the gap and can replay it")
}
