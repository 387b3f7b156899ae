package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
	"github.com/kvhash/kvhash/core"
)

// script is one index request: a mode and its steps, run on a fresh index.
type script struct {
	Mode  string
	Steps []protocol.Step
}

// numScripts splits the index round so that both modes run and a failure
// in one script does not hide the others.
const numScripts = 4

// genScripts draws the random index scripts from seed: total steps split
// over numScripts scripts, alternating warn and enforce.
func genScripts(seed uint64, total int) []script {
	rng := rand.New(rand.NewPCG(seed, 0x6b76686173682d69)) // "kvhash-i"
	docs := genDocs(rng)
	scripts := make([]script, numScripts)
	for i := range scripts {
		mode := protocol.ModeWarn
		if i%2 == 1 {
			mode = protocol.ModeEnforce
		}
		n := total / numScripts
		if i < total%numScripts {
			n++
		}
		g := newScriptGen(rng, docs)
		scripts[i] = script{Mode: mode, Steps: g.steps(n)}
	}
	return scripts
}

// genDocs makes shared prompt prefixes: the local hashes of random token
// blocks, as a router computes them, so that many stores and queries share
// their first blocks.
func genDocs(rng *rand.Rand) [][]uint64 {
	docs := make([][]uint64, 6)
	for i := range docs {
		tokens := make([]uint32, 16*(4+rng.IntN(37)))
		for j := range tokens {
			tokens[j] = uint32(rng.IntN(50000))
		}
		hashes, err := core.BlockHashes(tokens, 16, core.Options{})
		if err != nil {
			panic(fmt.Sprintf("local hashes of a generated prompt: %v", err)) // block size 16 is valid
		}
		docs[i] = hashes
	}
	return docs
}

// engine is the generator's picture of one worker rank: the salt of its
// external hashes (0 = deterministic, the same on every engine; a restart
// of an unstable engine draws a new one) and the blocks it has announced.
// The picture is rough on purpose: the events need only be plausible, the
// bindings are compared with each other, not with this model.
type engine struct {
	doc    int // the only document it serves; -1 = any
	id     uint64
	rank   uint32
	salt   uint64
	nextID uint64
	held   []uint64
	isHeld map[uint64]bool
}

func (e *engine) hold(h uint64) {
	if !e.isHeld[h] {
		e.isHeld[h] = true
		e.held = append(e.held, h)
	}
}

func (e *engine) drop(h uint64) {
	if e.isHeld[h] {
		delete(e.isHeld, h)
		for i, x := range e.held {
			if x == h {
				e.held = append(e.held[:i], e.held[i+1:]...)
				break
			}
		}
	}
}

func (e *engine) clear() { e.held, e.isHeld = nil, map[uint64]bool{} }

type scriptGen struct {
	rng     *rand.Rand
	docs    [][]uint64
	engines []*engine // engines[:main] serve any document, the rest one
	main    int
}

// Worker ids include 2^64-1 and 2^53+1, which only survive as strings.
var scriptWorkers = []struct {
	id    uint64
	ranks []uint32
}{{1, []uint32{0}}, {2, []uint32{0, 1}}, {7, []uint32{0, 1, 3}}, {1<<53 + 1, []uint32{0}}, {1<<64 - 1, []uint32{0, 2}}}

// numCrowd workers all serve one document, so that a query of it matches
// more worker ranks than the bindings' first result buffers hold (and
// their stats outgrow a first 4 KiB buffer): the grow-and-retry paths of
// every binding run.
const numCrowd = 24

func newScriptGen(rng *rand.Rand, docs [][]uint64) *scriptGen {
	g := &scriptGen{rng: rng, docs: docs}
	for _, w := range scriptWorkers {
		for _, r := range w.ranks {
			g.engines = append(g.engines, &engine{doc: -1, id: w.id, rank: r, isHeld: map[uint64]bool{}})
		}
	}
	g.main = len(g.engines)
	for i := range numCrowd {
		g.engines = append(g.engines, &engine{doc: 0, id: uint64(100 + i), isHeld: map[uint64]bool{}})
	}
	return g
}

func (g *scriptGen) steps(n int) []protocol.Step {
	steps := make([]protocol.Step, 0, n)
	for len(steps) < n-2 {
		steps = append(steps, g.step())
	}
	if n > 1 {
		steps = append(steps, protocol.Step{Dump: &protocol.DumpStep{}})
	}
	if n > 0 {
		steps = append(steps, protocol.Step{Stats: &protocol.StatsStep{}})
	}
	return steps
}

func (g *scriptGen) step() protocol.Step {
	e := g.engines[g.rng.IntN(g.main)]
	if g.rng.IntN(10) < 3 {
		e = g.engines[g.main+g.rng.IntN(len(g.engines)-g.main)]
	}
	switch p := g.rng.IntN(1000); {
	case p < 400:
		return g.apply(e, g.store(e))
	case p < 550:
		return g.apply(e, g.remove(e))
	case p < 570:
		e.clear()
		return g.apply(e, g.eventJSON(e, cleared()))
	case p < 580:
		g.forWorker(e.id, (*engine).clear)
		return protocol.Step{ClearAllBlocks: &protocol.WorkerStep{WorkerID: protocol.U64(e.id)}}
	case p < 590:
		g.forWorker(e.id, (*engine).clear)
		return protocol.Step{RemoveWorker: &protocol.WorkerStep{WorkerID: protocol.U64(e.id)}}
	case p < 600:
		// An unstable engine restarts: new external hashes for the same
		// content, while the index still holds the old ones.
		e.salt = g.rng.Uint64()
		return g.apply(e, g.store(e))
	case p < 610:
		return g.apply(e, malformed[g.rng.IntN(len(malformed))])
	case p < 640:
		return protocol.Step{Stats: &protocol.StatsStep{}}
	case p < 650:
		return protocol.Step{Dump: &protocol.DumpStep{}}
	}
	locals, _ := g.prompt(-1)
	if g.rng.IntN(50) == 0 {
		locals = []uint64{} // an empty query
	}
	return protocol.Step{FindMatches: &protocol.FindMatchesStep{
		Hashes: protocol.FromU64s(locals), EarlyExit: g.rng.IntN(4) == 0}}
}

func (g *scriptGen) forWorker(id uint64, f func(*engine)) {
	for _, e := range g.engines {
		if e.id == id {
			f(e)
		}
	}
}

func (g *scriptGen) apply(e *engine, event string) protocol.Step {
	return protocol.Step{Apply: &protocol.ApplyStep{WorkerID: protocol.U64(e.id), Event: event}}
}

// prompt is a shared prefix of a document, sometimes with a private tail,
// as local hashes and sequence hashes.
func (g *scriptGen) prompt(only int) (locals, seqs []uint64) {
	d := only
	if d < 0 {
		d = g.rng.IntN(len(g.docs))
	}
	doc := g.docs[d]
	locals = append([]uint64(nil), doc[:1+g.rng.IntN(len(doc))]...)
	for n := g.rng.IntN(5) - 1; n > 0; n-- {
		locals = append(locals, g.rng.Uint64())
	}
	return locals, core.SequenceHashes(locals)
}

// store announces blocks of a prompt the engine does not hold yet, under
// a parent it holds, with now and then an unknown parent, a duplicate, a
// self reference, a name reused for other content (within the store or
// from before) or media.
func (g *scriptGen) store(e *engine) string {
	locals, seqs := g.prompt(e.doc)
	ext := make([]uint64, len(seqs))
	for i, s := range seqs {
		ext[i] = s
		if e.salt != 0 {
			ext[i] = core.ChainStep(e.salt, s)
		}
	}
	start := 0
	for start < len(ext) && e.isHeld[ext[start]] {
		start++
	}
	if start == len(ext) || g.rng.IntN(5) == 0 {
		start = g.rng.IntN(len(ext)) // maybe held already, maybe an unknown parent
	}
	end := start + 1 + g.rng.IntN(len(ext)-start)
	parent := "null"
	if start > 0 {
		parent = strconv.FormatUint(ext[start-1], 10)
	}
	var blocks []string
	for i := start; i < end; i++ {
		blocks = append(blocks, g.block(ext[i], locals[i]))
		e.hold(ext[i])
	}
	switch g.rng.IntN(40) {
	case 0:
		parent = strconv.FormatUint(g.rng.Uint64(), 10) // a parent nobody stored
	case 1:
		if start > 0 {
			blocks[0] = g.block(ext[start-1], locals[start]) // the block is its own parent
		}
	case 2:
		blocks = append(blocks, blocks[0]) // a block twice in one store
	case 3:
		// A held name for other content: its old block stays held, unnamed.
		if len(e.held) > 0 {
			blocks = append(blocks, g.block(e.held[g.rng.IntN(len(e.held))], g.rng.Uint64()))
		}
	}
	pos := ""
	if g.rng.IntN(4) == 0 {
		pos = fmt.Sprintf(`,"start_position":%d`, 16*start)
	}
	return g.eventJSON(e, fmt.Sprintf(`{"stored":{"parent_hash":%s%s,"blocks":[%s]}}`,
		parent, pos, strings.Join(blocks, ",")))
}

func (g *scriptGen) block(ext, local uint64) string {
	mm := ""
	if g.rng.IntN(10) == 0 {
		mm = fmt.Sprintf(`,"mm_extra_info":{"mm_objects":[{"mm_hash":%d,"offsets":[[0,%d]]}]}`,
			g.rng.Uint64(), 1+g.rng.IntN(16))
	}
	return fmt.Sprintf(`{"block_hash":%d,"tokens_hash":%d%s}`, ext, local, mm)
}

// remove drops some held blocks and, now and then, one never stored.
func (g *scriptGen) remove(e *engine) string {
	var hashes []string
	for n := 1 + g.rng.IntN(4); n > 0 && len(e.held) > 0; n-- {
		h := e.held[g.rng.IntN(len(e.held))]
		e.drop(h)
		hashes = append(hashes, strconv.FormatUint(h, 10))
	}
	if len(hashes) == 0 || g.rng.IntN(5) == 0 {
		hashes = append(hashes, strconv.FormatUint(g.rng.Uint64(), 10))
	}
	return g.eventJSON(e, `{"removed":{"block_hashes":[`+strings.Join(hashes, ",")+`]}}`)
}

func cleared() string { return `"cleared"` }

func (g *scriptGen) eventJSON(e *engine, data string) string {
	e.nextID++
	rank := fmt.Sprintf(`,"dp_rank":%d`, e.rank)
	if e.rank == 0 && g.rng.IntN(2) == 0 {
		rank = "" // dp_rank defaults to 0
	}
	return fmt.Sprintf(`{"event_id":%d,"data":%s%s}`, e.nextID, data, rank)
}

// malformed events every binding must reject as a decode error (and one
// with an unknown field, which must be accepted).
var malformed = []string{
	`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":-5,"tokens_hash":1}]}}}`,
	`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":18446744073709551616,"tokens_hash":1}]}}}`,
	`{"event_id":1,"data":{"removed":{"block_hashes":[1.5]}}}`,
	`{"event_id":1,"data":"bogus"}`,
	`{"event_id":1,"data":{"removed":{"block_hashes":[1]}}`,
	`not json`,
	``,
	`{"event_id":2,"data":{"removed":{"block_hashes":[]}},"dp_rank":0,"extra":[1,{"a":null}]}`,
}
