// Command runner is the kvhash conformance runner: it runs every vector
// group, a seeded random differential round and a seeded random index
// script through every binding's testee (conformance/README.md, "Testee
// protocol"), prints a binding x group matrix, writes a JSON report and
// exits non-zero on any mismatch, crash, timeout or missing testee.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the parsed command line.
type config struct {
	seed           uint64
	cases          int
	only           []string
	extra          []testeeSpec
	noDefaults     bool
	root           string
	vectors        string
	reportPath     string
	timeout        time.Duration
	indexSteps     int
	reference      string
	indexReference string
	shrinkTrials   int
	limits         genLimits
}

type testeeFlags []testeeSpec

func (f *testeeFlags) String() string { return fmt.Sprint(len(*f)) }

func (f *testeeFlags) Set(s string) error {
	spec, err := parseTesteeFlag(s)
	if err != nil {
		return err
	}
	*f = append(*f, spec)
	return nil
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	var only string
	var extra testeeFlags
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the random differential cases and index scripts")
	fs.IntVar(&cfg.cases, "cases", 2000, "number of random differential cases")
	fs.StringVar(&only, "only", "", "run only these testees (comma-separated names); references still run, unlisted")
	fs.Var(&extra, "testee", "NAME=COMMAND: add a testee, or replace the default one of that name (repeatable)")
	fs.BoolVar(&cfg.noDefaults, "no-defaults", false, "run only the --testee testees")
	fs.StringVar(&cfg.root, "root", ".", "repository root (default testee paths are relative to it)")
	fs.StringVar(&cfg.vectors, "vectors", "conformance/vectors/v1", "vector directory")
	fs.StringVar(&cfg.reportPath, "report", "build/conformance-report.json", "JSON report path")
	fs.DurationVar(&cfg.timeout, "timeout", 20*time.Second, "per-request timeout")
	fs.IntVar(&cfg.indexSteps, "index-steps", 3200, "steps of the random index scripts (split over 4 scripts)")
	fs.StringVar(&cfg.reference, "reference", defaultReference, "testee whose hashing answers the differential round expects")
	fs.StringVar(&cfg.indexReference, "index-reference", defaultIndexReference, "testee whose index answers the index round expects")
	fs.IntVar(&cfg.shrinkTrials, "shrink-trials", 300, "maximum shrink trials per failing testee")
	fs.IntVar(&cfg.limits.MaxTokens, "max-tokens", 4096, "longest random prompt")
	fs.IntVar(&cfg.limits.MaxBlockSize, "max-block-size", 512, "largest random block size")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.cases < 0 || cfg.indexSteps < 0 || cfg.limits.MaxTokens < 0 || cfg.limits.MaxBlockSize < 1 {
		return cfg, fmt.Errorf("--cases, --index-steps, --max-tokens must be >= 0 and --max-block-size >= 1")
	}
	if only != "" {
		cfg.only = strings.Split(only, ",")
	}
	cfg.extra = extra
	return cfg, nil
}

// selectTestees returns the specs to run: defaults, overridden or extended
// by --testee, in a stable order.
func selectTestees(cfg config) ([]testeeSpec, error) {
	root, err := filepath.Abs(cfg.root)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	var specs []testeeSpec
	if !cfg.noDefaults {
		specs = defaultTestees(root)
	}
	for _, e := range cfg.extra {
		replaced := false
		for i := range specs {
			if specs[i].Name == e.Name {
				specs[i], replaced = e, true
			}
		}
		if !replaced {
			specs = append(specs, e)
		}
	}
	names := map[string]bool{}
	for _, s := range specs {
		names[s.Name] = true
	}
	for _, o := range cfg.only {
		if !names[o] {
			return nil, fmt.Errorf("--only %q: no such testee (have %v)", o, keys(names))
		}
	}
	// A reference that names no testee is a mistake in the command line,
	// not a failing binding: say so before running anything.
	for _, ref := range []struct{ flag, name string }{{"--reference", cfg.reference}, {"--index-reference", cfg.indexReference}} {
		if !names[ref.name] {
			return nil, fmt.Errorf("%s %q: no such testee (have %v)", ref.flag, ref.name, keys(names))
		}
	}
	return specs, nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "conformance:", err)
		return 2
	}
	specs, err := selectTestees(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "conformance:", err)
		return 2
	}
	groups, err := loadGroups(cfg.vectors)
	if err != nil {
		fmt.Fprintln(stderr, "conformance: vectors:", err)
		return 2
	}
	var rows []*testeeRun
	runs := map[string]*testeeRun{}
	for _, s := range specs {
		t := &testeeRun{spec: s, specVersion: filepath.Base(cfg.vectors), timeout: cfg.timeout}
		runs[s.Name] = t
		if len(cfg.only) == 0 || contains(cfg.only, s.Name) {
			rows = append(rows, t)
		}
	}
	defer func() {
		for _, t := range runs {
			t.close()
		}
	}()

	rep := &report{Spec: filepath.Base(cfg.vectors), Seed: cfg.seed, Cases: cfg.cases}
	for _, g := range groups {
		rep.Columns = append(rep.Columns, g.Name)
	}
	rep.Columns = append(rep.Columns, colDifferential, colIndex)
	cells := make(map[string]map[string]*cell, len(rows))
	for _, t := range rows {
		cells[t.spec.Name] = map[string]*cell{}
		for _, g := range groups {
			cells[t.spec.Name][g.Name] = t.runChecks(g.Checks)
		}
	}

	start := time.Now()
	diff := roundWithReference(runs, rows, cfg.reference, func(ref *testeeRun) map[string]*cell {
		return differential(ref, rows, genCases(cfg.seed, cfg.cases, cfg.limits), cfg.shrinkTrials)
	})
	fmt.Fprintf(stderr, "conformance: differential round (%d cases) took %v\n", cfg.cases, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	idx := roundWithReference(runs, rows, cfg.indexReference, func(ref *testeeRun) map[string]*cell {
		return indexRound(ref, rows, genScripts(cfg.seed, cfg.indexSteps), cfg.reference, cfg.shrinkTrials)
	})
	fmt.Fprintf(stderr, "conformance: index round (%d steps) took %v\n", cfg.indexSteps, time.Since(start).Round(time.Millisecond))

	for _, t := range rows {
		c := cells[t.spec.Name]
		c[colDifferential], c[colIndex] = diff[t.spec.Name], idx[t.spec.Name]
		rep.Testees = append(rep.Testees, testeeReport{
			Name: t.spec.Name, Command: append(envPrefix(t.spec.Env), t.spec.Argv...),
			Binding: t.hello.Binding, LibraryVersion: t.hello.LibraryVersion, SpecVersion: t.hello.SpecVersion,
			Ops: t.hello.Ops, Cells: c,
		})
	}
	rep.computeOK()
	printMatrix(stdout, rep)
	printFailureDetails(stdout, rep)
	if err := writeReport(cfg.reportPath, rep); err != nil {
		fmt.Fprintln(stderr, "conformance:", err)
		return 2
	}
	// The last line is the plain "N passed, N failed" that CI systems read.
	passed, failed := rep.counts()
	if !rep.OK {
		fmt.Fprintf(stdout, "\nconformance: FAILED (report: %s)\nconformance: %d passed, %d failed\n", cfg.reportPath, passed, max(failed, 1))
		return 1
	}
	fmt.Fprintf(stdout, "\nconformance: all %d testees pass (report: %s)\nconformance: %d passed, 0 failed\n", len(rows), cfg.reportPath, passed)
	return 0
}

// roundWithReference runs a round that needs a reference testee; without
// one, every row fails the round with a message saying so.
func roundWithReference(runs map[string]*testeeRun, rows []*testeeRun, name string,
	round func(ref *testeeRun) map[string]*cell) map[string]*cell {
	ref, ok := runs[name]
	if !ok {
		out := map[string]*cell{}
		for _, t := range rows {
			out[t.spec.Name] = &cell{Error: fmt.Sprintf("reference testee %q is not configured", name)}
		}
		return out
	}
	return round(ref)
}

func envPrefix(env []string) []string {
	if len(env) == 0 {
		return nil
	}
	return append([]string{"env"}, env...)
}
