package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// WriteDir writes the sweep to dir (created if needed): results.json,
// results.txt (the table), table.md (WriteMarkdown) and the plots (Plots). It returns the files
// written.
func WriteDir(dir string, res Results) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sim output: %w", err)
	}
	var files []string
	write := func(name string, b []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("sim output: %w", err)
		}
		files = append(files, p)
		return nil
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sim output: %w", err)
	}
	if err := write("results.json", append(js, '\n')); err != nil {
		return nil, err
	}
	var table bytes.Buffer
	if err := WriteTable(&table, res); err != nil {
		return nil, err
	}
	if err := write("results.txt", table.Bytes()); err != nil {
		return nil, err
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, res); err != nil {
		return nil, err
	}
	if err := write("table.md", md.Bytes()); err != nil {
		return nil, err
	}
	plots := Plots(res)
	names := make([]string, 0, len(plots))
	for n := range plots {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var svg bytes.Buffer
		if err := WriteSVG(&svg, res, plots[n]); err != nil {
			return nil, err
		}
		if err := write(n, svg.Bytes()); err != nil {
			return nil, err
		}
	}
	return files, nil
}
