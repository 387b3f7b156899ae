package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The runner's own tests use only the Go core testee (built here) and the
// fakes in testdata: no C library, wasm module or Python is needed. The Go
// core testee stands in for both references.

var (
	buildOnce sync.Once
	gocoreBin string
	buildErr  error
)

func gocoreTestee(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kvhash-runner-test")
		if err != nil {
			buildErr = err
			return
		}
		gocoreBin = filepath.Join(dir, "gocore-testee")
		out, err := exec.Command(goTool(), "build", "-o", gocoreBin, "../testees/gocore").CombinedOutput()
		if err != nil {
			buildErr = err
			gocoreBin = string(out)
		}
	})
	require.NoError(t, buildErr, "go build gocore testee: %s", gocoreBin)
	return gocoreBin
}

// goTool is the go command of the toolchain running the tests, which need
// not be the one on PATH (make's $(GO)).
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if gocoreBin != "" {
		_ = os.RemoveAll(filepath.Dir(gocoreBin))
	}
	os.Exit(code)
}

// runWith runs the runner with the Go core testee as both references plus
// extra testees, on a small round, and returns exit code, output, report.
func runWith(t *testing.T, extra ...string) (int, string, report) {
	return runFlags(t, nil, extra...)
}

func runFlags(t *testing.T, flags []string, extra ...string) (int, string, report) {
	t.Helper()
	bin := gocoreTestee(t)
	reportPath := filepath.Join(t.TempDir(), "report.json")
	args := []string{"--no-defaults", "--vectors", "../vectors/v1", "--report", reportPath,
		"--testee", "ref=" + bin, "--reference", "ref", "--index-reference", "ref",
		"--cases", "300", "--index-steps", "400", "--timeout", "2s"}
	args = append(args, flags...)
	for _, e := range extra {
		args = append(args, "--testee", e)
	}
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	var rep report
	data, err := os.ReadFile(reportPath)
	require.NoError(t, err, "stderr: %s", stderr.String())
	require.NoError(t, json.Unmarshal(data, &rep))
	return code, stdout.String(), rep
}

func row(t *testing.T, rep report, name string) testeeReport {
	t.Helper()
	for _, r := range rep.Testees {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q in the report", name)
	return testeeReport{}
}

func TestGoodTesteePasses(t *testing.T) {
	code, out, rep := runWith(t, "good="+gocoreTestee(t))
	require.Equal(t, 0, code, out)
	assert.True(t, rep.OK)
	good := row(t, rep, "good")
	assert.Equal(t, "go", good.Binding)
	for _, col := range rep.Columns {
		c := good.Cells[col]
		require.NotNil(t, c, col)
		assert.True(t, c.ok(), "%s: %+v", col, c)
		assert.Positive(t, c.Total, col)
	}
	assert.Equal(t, 300, good.Cells[colDifferential].Total)
	assert.Equal(t, 400, good.Cells[colIndex].Total)
	assert.Contains(t, out, "conformance: all 2 testees pass")
	passed, failed := rep.counts()
	assert.Zero(t, failed)
	assert.Regexp(t, fmt.Sprintf(`\nconformance: %d passed, 0 failed\n$`, passed), out, "the closing line CI reads")
}

// A testee whose seed is off by one must fail the seed-bearing groups and
// the differential round, with the smallest failing input: a seed request
// without options.
func TestBrokenSeedFailsReadably(t *testing.T) {
	code, out, rep := runWith(t, "good="+gocoreTestee(t), "broken=KVHASH_TESTEE_BREAK=seed "+gocoreTestee(t))
	require.Equal(t, 1, code, out)
	assert.False(t, rep.OK)
	assert.True(t, row(t, rep, "good").Cells["seeds"].ok())

	broken := row(t, rep, "broken")
	seeds := broken.Cells["seeds"]
	assert.Equal(t, seeds.Total, seeds.Failed)
	require.NotEmpty(t, seeds.Failures)
	assert.Contains(t, seeds.Failures[0].Reason, "seed: expected")
	assert.True(t, broken.Cells["raw"].ok(), "raw does not involve the seed")

	diff := broken.Cells[colDifferential]
	assert.Equal(t, diff.Total, diff.Failed, "every case asks for the seed")
	require.NotNil(t, diff.Smallest)
	require.Len(t, diff.Smallest.Requests, 1, "only the failing request is shown")
	assert.Equal(t, `{"op":"seed","lora_name":null,"cache_namespace":null}`, diff.Smallest.Requests[0])
	assert.Equal(t, `{"seed":"1337"}`, diff.Smallest.Expected[0])
	assert.Equal(t, `{"seed":"1338"}`, diff.Smallest.Got[0])

	assert.Contains(t, out, "FAIL broken / seeds")
	_, failed := rep.counts()
	assert.GreaterOrEqual(t, failed, seeds.Total+diff.Total)
	assert.Regexp(t, fmt.Sprintf(`\nconformance: \d+ passed, %d failed\n$`, failed), out)
	assert.Contains(t, out, "smallest failing input")
	assert.Regexp(t, `broken\s+.*FAIL`, out)
}

// A LoRA-only bug shrinks to one token, block size 1, a one-letter name.
func TestBrokenLoraShrinks(t *testing.T) {
	code, out, rep := runWith(t, "broken=KVHASH_TESTEE_BREAK=lora "+gocoreTestee(t))
	require.Equal(t, 1, code, out)
	broken := row(t, rep, "broken")
	assert.True(t, broken.Cells["public"].ok(), "no LoRA in the public vectors")
	assert.False(t, broken.Cells["lora"].ok())
	s := broken.Cells[colDifferential].Smallest
	require.NotNil(t, s)
	require.Len(t, s.Requests, 1)
	var req struct {
		Tokens    []uint32 `json:"tokens"`
		BlockSize int      `json:"block_size"`
		Options   struct {
			LoraName *string `json:"lora_name"`
			Eagle    bool    `json:"eagle"`
		} `json:"options"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.Requests[0]), &req))
	assert.Equal(t, []uint32{0}, req.Tokens)
	assert.Equal(t, 1, req.BlockSize)
	require.NotNil(t, req.Options.LoraName)
	assert.Len(t, []rune(*req.Options.LoraName), 1)
	assert.False(t, req.Options.Eagle)
}

func TestCrashIsReportedWithStderr(t *testing.T) {
	code, out, rep := runWith(t, "crash=testdata/crash.sh")
	require.Equal(t, 1, code, out)
	c := row(t, rep, "crash").Cells["boundaries"] // the first group
	assert.False(t, c.ok())
	assert.Contains(t, c.Error, "crash while answering")
	assert.Contains(t, c.Error, "dying on purpose")
	later := row(t, rep, "crash").Cells["public"]
	assert.Contains(t, later.Error, "not restarted again", "a testee that always crashes is given up on")
	assert.Contains(t, later.Error, "dying on purpose")
}

func TestTimeoutIsReported(t *testing.T) {
	code, out, rep := runFlags(t, []string{"--timeout", "300ms"}, "hang=testdata/hang.sh")
	require.Equal(t, 1, code, out)
	c := row(t, rep, "hang").Cells["boundaries"]
	assert.Contains(t, c.Error, "timeout")
}

func TestMissingTesteeFails(t *testing.T) {
	code, out, rep := runWith(t, "missing=/nonexistent/kvhash-testee")
	require.Equal(t, 1, code, out)
	for _, col := range rep.Columns {
		assert.False(t, row(t, rep, "missing").Cells[col].ok(), col)
	}
	assert.Contains(t, out, "FAIL missing / public")
	assert.Nil(t, row(t, rep, "missing").Cells[colDifferential].Smallest, "nothing to shrink without a testee")
}

func TestMissingDefaultTesteeNamesItsMakeTarget(t *testing.T) {
	specs := defaultTestees(t.TempDir())
	require.Len(t, specs, 7)
	for _, s := range specs {
		err := s.missing()
		if s.Name == "node" {
			continue // needs only node on PATH and files that may exist
		}
		require.Error(t, err, s.Name)
		assert.Contains(t, err.Error(), "make ", s.Name)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--testee", "noequals"},
		{"--only", "nosuch", "--vectors", "../vectors/v1"},
		{"--cases", "-1"},
		{"extra-arg"},
		{"--reference", "nosuch", "--vectors", "../vectors/v1"},
		{"--index-reference", "nosuch", "--vectors", "../vectors/v1"},
		{"--no-defaults", "--testee", "a=/bin/true", "--vectors", "../vectors/v1"}, // the default reference is not there
	} {
		var out bytes.Buffer
		assert.Equal(t, 2, run(args, &out, &out), "%v", args)
	}
}

func TestParseTesteeFlag(t *testing.T) {
	spec, err := parseTesteeFlag("py=A=1 B=x=y python3 t.py --flag")
	require.NoError(t, err)
	assert.Equal(t, "py", spec.Name)
	assert.Equal(t, []string{"A=1", "B=x=y"}, spec.Env)
	assert.Equal(t, []string{"python3", "t.py", "--flag"}, spec.Argv)
	_, err = parseTesteeFlag("x=A=1")
	assert.Error(t, err)
}

// An index whose tree sizes are off by one must fail the index round only,
// and shrink to a short script: a store and a query.
func TestBrokenIndexShrinks(t *testing.T) {
	code, out, rep := runWith(t, "broken=KVHASH_TESTEE_BREAK=index "+gocoreTestee(t))
	require.Equal(t, 1, code, out)
	broken := row(t, rep, "broken")
	assert.True(t, broken.Cells[colDifferential].ok())
	idx := broken.Cells[colIndex]
	require.False(t, idx.ok())
	require.NotEmpty(t, idx.Failures)
	assert.Contains(t, idx.Failures[0].Reason, "find_matches: scores differ")
	require.NotNil(t, idx.Smallest)
	assert.LessOrEqual(t, len(idx.Smallest.Requests), 2, "a store, then the query: %v", idx.Smallest.Requests)
	assert.Contains(t, idx.Smallest.Requests[len(idx.Smallest.Requests)-1], "find_matches")
	assert.Contains(t, out, "FAIL broken / index")
}
