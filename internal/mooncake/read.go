package mooncake

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxLineBytes bounds one line: a long conversation's hash ids run to tens
// of kilobytes, far below this.
const maxLineBytes = 64 << 20

// Read reads a whole trace (blank lines skipped). A line that is not JSON
// or not a valid request is an error naming its line number, and so is a
// trace with no requests: a replay of part of a trace would mislead.
func Read[T Timestamp](r io.Reader) ([]Request[T], error) {
	var out []Request[T]
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), maxLineBytes)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var q Request[T]
		if err := json.Unmarshal(b, &q); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		if err := q.Validate(); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("trace: no requests")
	}
	return out, nil
}

// ReadFile reads the trace at path. A file that cannot be opened gives
// os.Open's error as is (errors.Is(err, fs.ErrNotExist) holds for a
// missing one); a malformed trace's error is prefixed with path.
func ReadFile[T Timestamp](path string) ([]Request[T], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reqs, err := Read[T](f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return reqs, nil
}

// Write writes reqs in the trace format, one line each; Read reads them
// back as written.
func Write[T Timestamp](w io.Writer, reqs []Request[T]) error {
	enc := json.NewEncoder(w)
	for i, q := range reqs {
		if err := enc.Encode(q); err != nil {
			return fmt.Errorf("trace request %d: %w", i, err)
		}
	}
	return nil
}
