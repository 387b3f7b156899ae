package kvmock

import (
	"testing"
)

// FuzzCacheOps drives the block pool with random requests, releases and
// resets and checks after every step that its bookkeeping holds and that a
// router applying its events knows exactly the blocks the pool has cached.
func FuzzCacheOps(f *testing.F) {
	f.Add([]byte{0, 3, 1, 2, 3, 0, 3, 1, 2, 3, 1, 0, 0, 5, 9, 9, 9, 9, 9, 2})
	f.Add([]byte{0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1})
	f.Add([]byte{0, 2, 4, 4, 0, 2, 4, 5, 1, 1, 0, 2, 4, 4, 2})
	ids := newTestIDs()
	f.Fuzz(func(t *testing.T, ops []byte) {
		sink := &recordSink{}
		c := NewCache(6, 1, sink)
		routerView := map[Digest]bool{}
		var live []*Allocation
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		for len(ops) > 0 {
			switch next() % 3 {
			case 0: // a request of up to 7 blocks over a 3-token alphabet
				n := int(next()%7) + 1
				tokens := make([]uint32, n)
				for i := range tokens {
					tokens[i] = uint32(next() % 3)
				}
				chain, err := appendChain(nil, ids, SeqTag{}, tokens, 1)
				if err != nil {
					t.Fatal(err)
				}
				extra := int(next() % 3)
				a, err := c.Allocate(chain, n-1, n+extra)
				if err != nil {
					continue // full, or more than the pool: nothing changed
				}
				var parent *Digest
				if a.Hits > 0 {
					parent = &chain[a.Hits-1]
				}
				c.Store(a, a.Hits, chain[a.Hits:], parent, tokens[a.Hits:], SeqTag{})
				live = append(live, a)
			case 1:
				if len(live) > 0 {
					i := int(next()) % len(live)
					c.Release(live[i])
					live = append(live[:i], live[i+1:]...)
				}
			case 2:
				if err := c.Reset(); err != nil && len(live) == 0 {
					t.Fatalf("reset refused with nothing running: %v", err)
				}
			}
			for _, ev := range sink.take() {
				switch ev.Kind {
				case EventBlockStored:
					if len(ev.Tokens) != len(ev.Digests) {
						t.Fatalf("stored %d blocks with %d tokens", len(ev.Digests), len(ev.Tokens))
					}
					if ev.Parent != nil && !routerView[*ev.Parent] {
						t.Fatalf("stored under a parent the router does not know")
					}
					for _, d := range ev.Digests {
						if routerView[d] {
							t.Fatalf("stored %v twice", d)
						}
						routerView[d] = true
					}
				case EventBlockRemoved:
					for _, d := range ev.Digests {
						if !routerView[d] {
							t.Fatalf("removed %v, never stored", d)
						}
						delete(routerView, d)
					}
				case EventAllBlocksCleared:
					clear(routerView)
				}
			}
			checkPool(t, c, routerView)
		}
	})
}

func checkPool(t *testing.T, c *Cache, routerView map[Digest]bool) {
	t.Helper()
	free := 0
	for i := range c.blocks {
		b := &c.blocks[i]
		if b.refs < 0 {
			t.Fatalf("block %d: %d refs", i, b.refs)
		}
		if (b.refs == 0) != b.free {
			t.Fatalf("block %d: %d refs, in the free list: %v", i, b.refs, b.free)
		}
		if b.free {
			free++
		}
		if b.cached && c.byDigest[b.digest] != b {
			t.Fatalf("block %d: cached but not found under its id", i)
		}
	}
	if free != c.free.n {
		t.Fatalf("free list says %d, blocks say %d", c.free.n, free)
	}
	if len(routerView) != len(c.byDigest) {
		t.Fatalf("the router knows %d blocks, the pool caches %d", len(routerView), len(c.byDigest))
	}
	for d := range c.byDigest {
		if !routerView[d] {
			t.Fatalf("the pool caches a block the router never heard of")
		}
	}
}
