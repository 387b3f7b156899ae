package abi

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kvhash/kvhash/core"
)

// handleTable maps the integer handles foreign callers hold to indexes, so
// that no Go pointer crosses the ABI. Handles count up from 1 and are
// never reused: a freed handle stays unknown instead of silently naming a
// newer index. Lookups, on every index call and from many threads at once,
// take no lock (sync.Map is built for keys written once and read often).
type handleTable struct {
	last atomic.Uint64
	live sync.Map // uint64 -> *core.Index
}

// indexes is the process's (or WASM instance's) table.
var indexes handleTable

func (t *handleTable) add(x *core.Index) uint64 {
	h := t.last.Add(1)
	t.live.Store(h, x)
	return h
}

func (t *handleTable) get(h uint64) (*core.Index, error) {
	if v, ok := t.live.Load(h); ok {
		return v.(*core.Index), nil
	}
	return nil, unknownHandle(h)
}

// remove forgets h. Calls that already looked the index up finish on it;
// the garbage collector frees it after them.
func (t *handleTable) remove(h uint64) error {
	if _, ok := t.live.LoadAndDelete(h); !ok {
		return unknownHandle(h)
	}
	return nil
}

func unknownHandle(h uint64) error {
	if h == 0 {
		return fmt.Errorf("%w: handle 0 names no index (it is what a binding holds after freeing one)", ErrUnknownHandle)
	}
	return fmt.Errorf("%w: %d (never created, or already freed)", ErrUnknownHandle, h)
}
