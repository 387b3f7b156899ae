package indexer

import (
	"fmt"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/enginehash"
)

// The second evidence of random ids (verify.go has the first, the same
// tokens named otherwise after a restart): two engines that should agree
// naming the same tokens otherwise. Engines agree when nothing kvrouter
// can know tells them apart: the same model and the same engine_hash
// setting (the block size is the indexer's, and the cache salt, extra
// keys and lookahead are part of the content compared). A scheme
// kvrouter does not know but that is deterministic names the same
// content alike on every such engine; a random root per process does
// not.

// peerRootKey is what engines that should agree share for one root
// block's content.
type peerRootKey struct {
	model, setting string
	content        uint64 // rootContentKey
}

// peerRoot is the last unknown root a rank named a content with.
type peerRoot struct {
	wireID uint64
	rank   core.Worker
}

// maxPeerRoots bounds the remembered unknown roots across ranks.
const maxPeerRoots = 16384

// peerDisagrees remembers an unknown root store's wire id for its
// content among the engines that should agree with this rank, and
// returns the evidence of randomness when another of them named the same
// content otherwise ("" when none did).
func (a *applier) peerDisagrees(hc *hashCheck, st enginehash.RootStore) string {
	key := peerRootKey{model: a.w.key.Model, setting: hc.setting.String(), content: rootContentKey(st)}
	x := a.x
	x.peerRootsMu.Lock()
	defer x.peerRootsMu.Unlock()
	prev, seen := x.peerRoots[key]
	if x.peerRoots == nil || len(x.peerRoots) >= maxPeerRoots {
		x.peerRoots = map[peerRootKey]peerRoot{}
	}
	x.peerRoots[key] = peerRoot{wireID: st.WireID, rank: a.r.w}
	if !seen || prev.rank == a.r.w || prev.wireID == st.WireID {
		return ""
	}
	return fmt.Sprintf("worker %d rank %d, of the same model and engine_hash (%s), named the same root block's tokens %d where this rank names them %d",
		prev.rank.ID, prev.rank.DPRank, key.setting, prev.wireID, st.WireID)
}
