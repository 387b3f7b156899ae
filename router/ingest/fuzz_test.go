package ingest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// FuzzDecodeBatch: any payload decodes or fails with a DecodeError; never
// a panic, never a batch with an unknown kind or a token past u32; and
// decoding is deterministic (the reused decoder keeps no state between
// payloads).
func FuzzDecodeBatch(f *testing.F) {
	golden, _ := filepath.Glob("testdata/golden/*.msgpack")
	for _, p := range golden {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, l := range []ingesttest.Layout{ingesttest.MapEvents, ingesttest.ArrayEvents} {
		spec := ingesttest.Spec{Layout: l, Events: 2, BlocksPerEvent: 2, BlockSize: 4, RemoveEvery: 1, BytesHashes: l == ingesttest.ArrayEvents, Seed: 3}
		f.Add(ingesttest.NewGenerator(spec).Next())
	}
	f.Add([]byte{0x92, 0xcb})
	f.Add([]byte{0x82, 0xa2, 't', 's', 0x00, 0xa6, 'e', 'v', 'e', 'n', 't', 's', 0x90})
	dec := NewDecoder()
	fresh := NewDecoder()
	f.Fuzz(func(t *testing.T, payload []byte) {
		b, unknown, err := dec.DecodeBatch("t", 1, payload)
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if b != nil {
				t.Fatal("a batch beside an error")
			}
			return
		}
		if unknown < 0 {
			t.Fatal("negative unknown count")
		}
		for i, ev := range b.Events {
			if ev.Kind < BlockStored || ev.Kind > AllBlocksCleared {
				t.Fatalf("event %d of kind %d", i, ev.Kind)
			}
		}
		again, unknown2, err := fresh.DecodeBatch("t", 1, payload)
		if err != nil || unknown2 != unknown || len(again.Events) != len(b.Events) {
			t.Fatalf("not deterministic: %v", err)
		}
		for i := range b.Events {
			if len(again.Events[i].TokenIDs) != len(b.Events[i].TokenIDs) || len(again.Events[i].BlockHashes) != len(b.Events[i].BlockHashes) {
				t.Fatalf("event %d differs between decoders", i)
			}
		}
	})
}

// FuzzParseFrames: any multipart message is a live message, a replay
// reply or an error; never a panic.
func FuzzParseFrames(f *testing.F) {
	f.Add([]byte("kv"), seqBytes(1), []byte{0x90}, 3)
	f.Add([]byte{}, endMarker, []byte{}, 4)
	f.Fuzz(func(t *testing.T, a, b, c []byte, n int) {
		frames := [][]byte{a, b, c, a, b}
		if n < 0 {
			n = -n
		}
		frames = frames[:n%len(frames)]
		_, _ = parseLive(frames)
		_, _ = parseReplayReply(frames)
	})
}
