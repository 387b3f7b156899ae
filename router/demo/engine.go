package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kvhash/kvhash/router/kvmock"
)

// EngineConfig is what the demo sets on every kvmock engine.
type EngineConfig struct {
	Model               string
	BlockSize           int
	NumBlocks           int
	MaxRunning          int
	PrefillTokensPerSec float64
	DecodeMsPerToken    float64
	Speedup             float64
	MaxModelLen         int
	Unstable            bool
}

// Addrs is where an engine serves: HTTP host:port, the KV events PUB and
// the replay ROUTER as tcp://host:port.
type Addrs struct {
	HTTP, Events, Replay string
}

// BaseURL is the engine's OpenAI base URL.
func (a Addrs) BaseURL() string { return "http://" + a.HTTP }

// Engine is one running kvmock.
type Engine interface {
	Addrs() Addrs
	Stop() error
}

// Launcher starts engines. With at zero-valued, ports are picked; with at
// set, the engine takes those addresses again (a restart in place, as an
// engine process restarted by its supervisor).
type Launcher interface {
	Start(ctx context.Context, name string, cfg EngineConfig, at Addrs) (Engine, error)
}

// loopbackBind is a ZeroMQ endpoint kvmock binds (vLLM's rule: an
// endpoint with "::" binds) on the IPv4 loopback only: the IPv4-mapped
// form lets a restart bind a fixed port without listening on every
// interface.
func loopbackBind(hostport string) string {
	_, port, _ := net.SplitHostPort(hostport)
	if port == "" {
		port = "0"
	}
	return "tcp://[::ffff:127.0.0.1]:" + port
}

func hostPort(endpoint string) string {
	if len(endpoint) > len("tcp://") {
		return endpoint[len("tcp://"):]
	}
	return ""
}

// ProcLauncher starts engines as child processes of the kvmock binary.
type ProcLauncher struct {
	Bin    string // path to kvmock
	LogDir string // each engine's stderr goes to LogDir/NAME.log
}

type procEngine struct {
	cmd   *exec.Cmd
	addrs Addrs
	// exited is closed once the process has exited and waitErr is set:
	// a closed channel can be read by waitReady and by Stop alike (a
	// value sent once could be read by only one of them, and the other
	// would wait forever).
	exited  chan struct{}
	waitErr error
	log     *os.File
}

// Start implements Launcher.
func (l ProcLauncher) Start(ctx context.Context, name string, cfg EngineConfig, at Addrs) (Engine, error) {
	if err := os.MkdirAll(l.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("engine %s: log dir: %w", name, err)
	}
	ready := filepath.Join(l.LogDir, name+".ready.json")
	_ = os.Remove(ready)
	listen := at.HTTP
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	args := []string{
		"--listen", listen, "--ready-file", ready, "--model", cfg.Model,
		"--kv-events-endpoint", loopbackBind(hostPort(at.Events)), "--replay-endpoint", loopbackBind(hostPort(at.Replay)),
		"--block-size", strconv.Itoa(cfg.BlockSize), "--num-blocks", strconv.Itoa(cfg.NumBlocks),
		"--max-running", strconv.Itoa(cfg.MaxRunning), "--max-model-len", strconv.Itoa(cfg.MaxModelLen),
		"--prefill-tokens-per-sec", ftoa(cfg.PrefillTokensPerSec), "--decode-ms-per-token", ftoa(cfg.DecodeMsPerToken),
		"--speedup", ftoa(cfg.Speedup), "--log-level", "warn",
	}
	if cfg.Unstable {
		args = append(args, "--unstable")
	}
	logf, err := os.OpenFile(filepath.Join(l.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engine %s: log: %w", name, err)
	}
	cmd := exec.Command(l.Bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C at the terminal reaches the demo,
	// which stops the engines itself, in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("engine %s: starting %s: %w", name, l.Bin, err)
	}
	e := &procEngine{cmd: cmd, exited: make(chan struct{}), log: logf}
	go func() {
		e.waitErr = cmd.Wait()
		close(e.exited)
	}()
	info, err := waitReady(ctx, ready, e.exited, func() error { return e.waitErr })
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("engine %s (log %s): %w", name, logf.Name(), err)
	}
	e.addrs = Addrs{HTTP: info.HTTP, Events: info.KVEvents, Replay: info.Replay}
	return e, nil
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// readyInfo is kvmock's --ready-file.
type readyInfo struct {
	HTTP     string `json:"http"`
	KVEvents string `json:"kv_events"`
	Replay   string `json:"replay"`
}

func waitReady(ctx context.Context, path string, exited <-chan struct{}, waitErr func() error) (readyInfo, error) {
	deadline := time.After(15 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			var info readyInfo
			if err := json.Unmarshal(b, &info); err != nil {
				return info, fmt.Errorf("ready file: %w", err)
			}
			return info, nil
		}
		select {
		case <-exited:
			return readyInfo{}, fmt.Errorf("exited before ready: %v", waitErr())
		case <-deadline:
			return readyInfo{}, errors.New("not ready after 15s")
		case <-ctx.Done():
			return readyInfo{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (e *procEngine) Addrs() Addrs { return e.addrs }

// Stop asks the engine to stop (SIGTERM) and kills it if it has not
// within 5 seconds.
func (e *procEngine) Stop() error {
	defer e.log.Close()
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
		return nil
	case <-time.After(5 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.exited
		return fmt.Errorf("engine pid %d did not stop on SIGTERM; killed", e.cmd.Process.Pid)
	}
}

// InprocLauncher runs engines in this process (kvmock.NewServer), on
// real loopback sockets: the tests' launcher, no binary needed.
type InprocLauncher struct {
	Logger *slog.Logger // nil discards
}

type inprocEngine struct {
	srv   *kvmock.Server
	hs    *http.Server
	addrs Addrs
}

// Start implements Launcher.
func (l InprocLauncher) Start(_ context.Context, name string, cfg EngineConfig, at Addrs) (Engine, error) {
	kc := kvmock.DefaultConfig()
	kc.Model, kc.BlockSize, kc.NumBlocks, kc.MaxRunning = cfg.Model, cfg.BlockSize, cfg.NumBlocks, cfg.MaxRunning
	kc.MaxModelLen, kc.PrefillTokensPerSec, kc.Speedup, kc.Unstable = cfg.MaxModelLen, cfg.PrefillTokensPerSec, cfg.Speedup, cfg.Unstable
	kc.DecodeTimePerToken = time.Duration(cfg.DecodeMsPerToken * float64(time.Millisecond))
	kc.EventsEndpoint, kc.ReplayEndpoint = loopbackBind(hostPort(at.Events)), loopbackBind(hostPort(at.Replay))
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv, err := kvmock.NewServer(kc, log.With("engine", name))
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", name, err)
	}
	listen := at.HTTP
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("engine %s: %w", name, err)
	}
	e := &inprocEngine{srv: srv, hs: &http.Server{Handler: srv.Handler, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = e.hs.Serve(ln) }()
	e.addrs = Addrs{HTTP: ln.Addr().String(), Events: "tcp://" + srv.Publisher.EventsAddr().String(), Replay: "tcp://" + srv.Publisher.ReplayAddr().String()}
	return e, nil
}

func (e *inprocEngine) Addrs() Addrs { return e.addrs }

// Subscribed reports whether a router subscribes to the engine's events:
// a PUB socket drops what it sends before, so tests wait for it before
// sending requests whose events they assert on.
func (e *inprocEngine) Subscribed() bool { return e.srv.Publisher.Subscribed() }

func (e *inprocEngine) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.hs.Shutdown(ctx)
	if err != nil {
		_ = e.hs.Close()
	}
	return errors.Join(err, e.srv.Close())
}
