package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/serve"
)

// Router is kvrouter running in this process on a loopback listener.
type Router struct {
	Server *serve.Server
	URL    string // http://host:port
	// AdminToken is what state changes (registering workers) must carry
	// as Authorization: Bearer; the demo's own, random, never printed.
	AdminToken string
	hs         *http.Server
	// stopExtra stops what StartReplicas runs behind the front.
	stopExtra func() error
}

// RouterConfig is the demo's kvrouter: the engines' block size, enforce
// mode (an engine whose hashes prove unstable is quarantined) and short
// settle times, so a two-minute demo shows both transitions.
func RouterConfig(listen string, blockSize int) config.Config {
	cfg := config.Default()
	cfg.Listen = listen
	cfg.BlockSize = blockSize
	cfg.Index.StabilityMode = "enforce"
	cfg.Index.QuarantineSettle = 2 * time.Second
	cfg.Index.DegradedSettle = 2 * time.Second
	cfg.Limits.MaxBodyBytes = 64 << 20
	cfg.Log.Level = "warn"
	// Auth on, as in production: the demo registers its engines with a
	// random admin token of its own (docs/guides/security.md).
	cfg.Security.AdminToken = randomToken()
	return cfg
}

// randomToken is 32 random bytes in hex.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// StartRouter starts kvrouter (its ZeroMQ ingest included) on cfg.Listen.
func StartRouter(cfg config.Config, log *slog.Logger) (*Router, error) {
	srv, err := serve.New(serve.Options{Config: cfg, Logger: log, NewIngest: func(h ingest.Handler, l *slog.Logger) (serve.Ingest, error) {
		return ingest.New(ingest.Options{Handler: h, Logger: l})
	}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("kvrouter: listen %s: %w", cfg.Listen, err)
	}
	r := &Router{Server: srv, URL: "http://" + ln.Addr().String(), AdminToken: cfg.Security.AdminToken, hs: srv.HTTPServer()}
	go func() { _ = r.hs.Serve(ln) }()
	if err := srv.Start(); err != nil {
		_ = r.hs.Close()
		return nil, err
	}
	return r, nil
}

// Stop drains HTTP and shuts kvrouter down.
func (r *Router) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.hs.Shutdown(ctx)
	if err != nil {
		_ = r.hs.Close()
	}
	if r.stopExtra != nil {
		return errors.Join(err, r.stopExtra())
	}
	return errors.Join(err, r.Server.Shutdown(ctx))
}

// client talks to kvrouter's API over HTTP, as any client would.
type client struct {
	base string
	http *http.Client
	// token: kvrouter's admin token (empty for an engine's API).
	token string
}

func (c *client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// register registers an engine as a worker of model.
func (c *client) register(ctx context.Context, id uint64, model string, a Addrs) error {
	return c.do(ctx, http.MethodPost, "/v1/workers", map[string]any{
		"worker_id": id, "model": model, "endpoint": a.Events, "replay_endpoint": a.Replay, "base_url": a.BaseURL(),
	}, nil)
}

func (c *client) unregister(ctx context.Context, id uint64) error {
	return c.do(ctx, http.MethodDelete, fmt.Sprintf("/v1/workers/%d", id), nil, nil)
}

func (c *client) dashboard(ctx context.Context) (proxy.Dashboard, error) {
	var d proxy.Dashboard
	err := c.do(ctx, http.MethodGet, "/v1/dashboard", nil, &d)
	return d, err
}

// setEngineHealth flips a kvmock engine's /health (kvmock's switch).
func setEngineHealth(ctx context.Context, hc *http.Client, a Addrs, healthy bool) error {
	c := client{base: a.BaseURL(), http: hc}
	return c.do(ctx, http.MethodPost, "/kvmock/health", map[string]bool{"healthy": healthy}, nil)
}
