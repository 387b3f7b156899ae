package indexerbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Model is the model name both indexes register the engines under.
const Model = "bench"

// Target is an indexer serving Dynamo's standalone indexer API on URL:
// a process of its own (PID > 0), measured from /proc, or one in this
// process (PID 0: tests).
type Target struct {
	Name string
	URL  string
	PID  int
	cmd  *exec.Cmd
	log  *os.File
}

// Command says how to start one side: its name and argv, "{port}" in
// argv replaced by a free loopback port.
type Command struct {
	Name string
	Argv []string
}

// KVRouterCommand runs kvrouter's binary at the block size.
func KVRouterCommand(bin string, blockSize int) Command {
	return Command{Name: "kvrouter", Argv: []string{bin, "--block-size", strconv.Itoa(blockSize),
		"--listen", "127.0.0.1:{port}", "--log-level", "warn"}}
}

// DynamoCommand runs Dynamo's standalone indexer from its wheel
// (python -m dynamo.indexer) with threads indexer threads (its default is
// 4; 0 keeps the default).
func DynamoCommand(python string, threads int) Command {
	argv := []string{python, "-m", "dynamo.indexer", "--port", "{port}"}
	if threads > 0 {
		argv = append(argv, "--threads", strconv.Itoa(threads))
	}
	return Command{Name: "dynamo", Argv: argv}
}

// Start runs c, its output to logPath, and waits for its /health.
func Start(ctx context.Context, c Command, logPath string) (*Target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	argv := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		argv[i] = strings.ReplaceAll(a, "{port}", strconv.Itoa(port))
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	t := &Target{Name: c.Name, URL: fmt.Sprintf("http://127.0.0.1:%d", port), PID: cmd.Process.Pid, cmd: cmd, log: logFile}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if code, _, err := get(ctx, t.URL+"/health"); err == nil && code == http.StatusOK {
			return t, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = t.Stop()
			return nil, fmt.Errorf("%s did not answer /health within 60 s (log: %s)", c.Name, logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the process and waits for it.
func (t *Target) Stop() error {
	if t.cmd == nil {
		return nil
	}
	_ = t.cmd.Process.Signal(syscall.SIGKILL)
	_ = t.cmd.Wait()
	t.cmd = nil
	return t.log.Close()
}

// Register registers engine i as instance i+1 at its endpoint through
// POST /register (the API both serve).
func (t *Target) Register(ctx context.Context, endpoints []string, blockSize int) error {
	for i, ep := range endpoints {
		body := map[string]any{"instance_id": i + 1, "endpoint": ep, "model_name": Model, "block_size": blockSize}
		code, out, err := postJSON(ctx, t.URL+"/register", body)
		if err != nil {
			return fmt.Errorf("%s: register engine %d: %w", t.Name, i, err)
		}
		if code != http.StatusOK && code != http.StatusCreated {
			return fmt.Errorf("%s: register engine %d: %d %s", t.Name, i, code, out)
		}
	}
	return nil
}

// CPUSeconds is the process's user + system CPU time so far (0 for a
// target in this process).
func (t *Target) CPUSeconds() (float64, error) {
	if t.PID == 0 {
		return 0, nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", t.PID))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", t.PID, len(fields))
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(fields[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", t.PID, fields[11], fields[12])
	}
	return float64(utime+stime) / clockTicks, nil
}

// clockTicks is USER_HZ, 100 on Linux everywhere it matters.
const clockTicks = 100

// PeakRSS is the process's peak resident set (VmHWM), in bytes.
func (t *Target) PeakRSS() (int64, error) {
	if t.PID == 0 {
		return 0, nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", t.PID))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", t.PID)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

func get(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	return do(req)
}

func postJSON(ctx context.Context, url string, body any) (int, []byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	return postRaw(ctx, url, data)
}

func postRaw(ctx context.Context, url string, data []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(req)
}

func do(req *http.Request) (int, []byte, error) {
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
