// Command kvmock is a simulated vLLM engine: vLLM's OpenAI-compatible API,
// a KV cache with prefix reuse, and vLLM-format KV events over ZeroMQ, for
// testing KV-aware routers (kvrouter or any other) without GPUs. See
// router/kvmock for the model and `kvmock --help` for the flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kvhash/kvhash/router/kvmock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// shutdownGrace is how long running requests get to finish on shutdown.
const shutdownGrace = 5 * time.Second

// run is the whole program: 0 after a clean shutdown (ctx ended), 1 when
// serving fails, 2 for bad flags.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if isHelp(err) {
			return 0
		}
		fmt.Fprintf(stderr, "kvmock: %v\n", err)
		return 2
	}
	log := newLogger(stderr, o)

	srv, err := kvmock.NewServer(o.cfg, log)
	if err != nil {
		log.Error("kvmock: cannot start", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		log.Error("kvmock: cannot listen", "addr", o.listen, "err", err)
		_ = srv.Close()
		return 1
	}
	hs := &http.Server{Handler: srv.Handler, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	attrs := []any{
		"http", ln.Addr().String(), "model", o.cfg.Model,
		"block_size", o.cfg.BlockSize, "num_blocks", o.cfg.NumBlocks,
		"hash_algo", o.cfg.HashAlgo, "unstable", o.cfg.Unstable, "root", srv.Root.String(),
		"event_format", o.cfg.EventFormat, "hash_format", o.cfg.HashFormat, "speedup", o.cfg.Speedup,
	}
	if p := srv.Publisher; p != nil {
		attrs = append(attrs, "kv_events", o.cfg.EventsEndpoint, "topic", o.cfg.Topic)
		if a := p.EventsAddr(); a != nil {
			attrs = append(attrs, "kv_events_bound", a.String())
		}
		if a := p.ReplayAddr(); a != nil {
			attrs = append(attrs, "replay_bound", a.String(), "replay_shape", o.cfg.ReplayShape)
		}
	}
	if o.readyFile != "" {
		if err := writeReadyFile(o.readyFile, ln.Addr(), srv); err != nil {
			log.Error("kvmock: cannot write the ready file", "path", o.readyFile, "err", err)
			_ = hs.Close()
			_ = srv.Close()
			return 1
		}
	}
	log.Info("kvmock ready", attrs...)

	code := 0
	select {
	case <-ctx.Done():
		log.Info("kvmock shutting down")
	case err := <-serveErr:
		log.Error("kvmock: HTTP server failed", "err", err)
		code = 1
	}
	// Stop taking requests, let running ones finish (their last events
	// go out), then flush and close the event sockets.
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("kvmock: requests still running at shutdown were cut", "err", err)
		_ = hs.Close()
	}
	if err := srv.Close(); err != nil {
		log.Warn("kvmock: closing the event sockets", "err", err)
	}
	st := srv.Engine.State()
	log.Info("kvmock stopped", "requests", st.Stats.Requests, "prompt_tokens", st.Stats.PromptTokens,
		"cached_tokens", st.Stats.CachedTokens, "generated_tokens", st.Stats.GeneratedTokens)
	return code
}

func newLogger(w io.Writer, o options) *slog.Logger {
	ho := &slog.HandlerOptions{Level: o.logLevel}
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}
