package protocol

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Serve answers requests read from r, one JSON line each, on w until r
// ends. It returns an error only when reading or writing fails; a request
// the binding rejects gets an error answer.
func Serve(r io.Reader, w io.Writer, b Binding) error {
	in := bufio.NewReaderSize(r, 1<<20)
	out := bufio.NewWriterSize(w, 1<<16)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			answer := handle(line, b)
			data, merr := json.Marshal(answer)
			if merr != nil {
				return fmt.Errorf("encode answer: %w", merr)
			}
			data = append(data, '\n')
			if _, werr := out.Write(data); werr != nil {
				return fmt.Errorf("write answer: %w", werr)
			}
			// One flush per answer: the runner waits for each answer
			// with a timeout, so none may sit in a buffer.
			if ferr := out.Flush(); ferr != nil {
				return fmt.Errorf("write answer: %w", ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read request: %w", err)
		}
	}
}

type answer map[string]any

func handle(line []byte, b Binding) answer {
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		var id struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(line, &id) // best effort: echo the id if there is one
		return answer{"id": id.ID, "error": "bad request: " + err.Error()}
	}
	a, err := dispatch(req, b)
	if err != nil {
		return answer{"id": req.ID, "error": err.Error()}
	}
	a["id"] = req.ID
	return a
}

func dispatch(req Request, b Binding) (answer, error) {
	switch req.Op {
	case OpHello:
		h := b.Hello()
		return answer{"binding": h.Binding, "library_version": h.LibraryVersion,
			"spec_version": h.SpecVersion, "ops": h.Ops}, nil
	case OpBlockHashes:
		hashes, err := b.BlockHashes(req.Tokens, req.BlockSize, req.Options)
		if err != nil {
			return nil, err
		}
		return answer{"block_hashes": nonNil(FromU64s(hashes))}, nil
	case OpSequenceHashes:
		hashes, err := b.SequenceHashes(U64s(req.BlockHashes))
		if err != nil {
			return nil, err
		}
		return answer{"sequence_hashes": nonNil(FromU64s(hashes))}, nil
	case OpSeed:
		seed, err := b.Seed(deref(req.LoraName), deref(req.CacheNamespace))
		if err != nil {
			return nil, err
		}
		return answer{"seed": U64(seed)}, nil
	case OpChainStep:
		h, err := b.ChainStep(uint64(req.Parent), uint64(req.Local))
		if err != nil {
			return nil, err
		}
		return answer{"hash": U64(h)}, nil
	case OpRawHash:
		rh, ok := b.(RawHasher)
		if !ok {
			return nil, fmt.Errorf("unsupported op %q", req.Op)
		}
		data, err := hex.DecodeString(req.BytesHex)
		if err != nil {
			return nil, fmt.Errorf("bytes_hex: %w", err)
		}
		h, err := rh.RawHash(data)
		if err != nil {
			return nil, err
		}
		return answer{"hash": U64(h)}, nil
	case OpIndex:
		ix, ok := b.(Indexer)
		if !ok {
			return nil, fmt.Errorf("unsupported op %q", req.Op)
		}
		results, err := runScript(ix, req.Mode, req.Steps)
		if err != nil {
			return nil, err
		}
		return answer{"results": results}, nil
	}
	return nil, fmt.Errorf("unknown op %q", req.Op)
}

// runScript runs an index script on a fresh index, one result per step.
func runScript(ix Indexer, mode string, steps []Step) ([]StepResult, error) {
	index, err := ix.NewIndex(mode)
	if err != nil {
		return nil, fmt.Errorf("new index (mode %q): %w", mode, err)
	}
	defer index.Close()
	results := make([]StepResult, len(steps))
	for i, s := range steps {
		results[i] = runStep(ix, index, s)
	}
	return results, nil
}

func runStep(ix Indexer, index Index, s Step) StepResult {
	fail := func(err error) StepResult {
		return StepResult{Error: ix.ErrorKind(err), Message: err.Error()}
	}
	switch {
	case s.Apply != nil:
		if err := index.ApplyJSON(uint64(s.Apply.WorkerID), []byte(s.Apply.Event)); err != nil {
			return fail(err)
		}
		return StepResult{OK: true}
	case s.FindMatches != nil:
		m, err := index.FindMatches(U64s(s.FindMatches.Hashes), s.FindMatches.EarlyExit)
		if err != nil {
			return fail(err)
		}
		if m == nil {
			m = []Match{}
		}
		return StepResult{Scores: &m}
	case s.RemoveWorker != nil:
		if err := index.RemoveWorker(uint64(s.RemoveWorker.WorkerID)); err != nil {
			return fail(err)
		}
		return StepResult{OK: true}
	case s.ClearAllBlocks != nil:
		if err := index.ClearAllBlocks(uint64(s.ClearAllBlocks.WorkerID)); err != nil {
			return fail(err)
		}
		return StepResult{OK: true}
	case s.Stats != nil:
		data, err := index.StatsJSON()
		if err != nil {
			return fail(err)
		}
		if !json.Valid(data) {
			return StepResult{Error: KindInternal, Message: fmt.Sprintf("stats are not JSON: %.200q", data)}
		}
		return StepResult{Stats: json.RawMessage(data)}
	case s.Dump != nil:
		events, err := index.Dump()
		if err != nil {
			return fail(err)
		}
		if events == nil {
			events = []string{}
		}
		return StepResult{Events: &events}
	}
	return StepResult{Error: KindInvalidArgument, Message: "step has no known operation"}
}
