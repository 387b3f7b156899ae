// Command kvrouter is the KV-aware router service: it subscribes to
// engines' KV event streams, keeps one index per model, and answers which
// worker should serve a prompt (POST /v1/route), plus Dynamo's standalone
// indexer's API.
//
//	kvrouter --listen ADDR --block-size N [--config FILE] [--print-config]
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/serve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program: exit 0 on a clean shutdown, 2 on a bad
// command line or config, 1 when serving failed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "doctor" {
		return runDoctor(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "demo" {
		return runDemo(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			printUsage(stdout)
			return 0
		case "version", "-version", "--version":
			fmt.Fprintln(stdout, version())
			return 0
		case "sim":
			return runSim(ctx, args[1:], stdout, stderr)
		}
	}
	p, err := config.Parse("kvrouter", args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0 // -h after other flags: the flags were printed
	}
	if err != nil {
		fmt.Fprintf(stderr, "kvrouter: %v\n", err)
		return 2
	}
	if p.PrintConfig {
		out, err := p.Config.YAML()
		if err != nil {
			fmt.Fprintf(stderr, "kvrouter: %v\n", err)
			return 1
		}
		_, _ = stdout.Write(out)
		return 0
	}
	log := newLogger(p.Config.Log, stderr)
	if err := serveUntilDone(ctx, p.Config, log); err != nil {
		log.Error("kvrouter: stopped", "error", err)
		if errors.Is(err, serve.ErrStart) {
			return 2 // the config cannot be served: as a bad value is
		}
		return 1
	}
	return 0
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToLower(c.Level))) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serveUntilDone serves until ctx ends, then shuts down gracefully: stop
// accepting, drain requests, stop the subscribers, write the snapshot.
func serveUntilDone(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	srv, err := serve.New(serve.Options{Config: cfg, Logger: log, NewIngest: newIngest(cfg)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	httpSrv := srv.HTTPServer()
	if sec := cfg.Security; sec.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(sec.TLSCertFile, sec.TLSKeyFile)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("tls: %w", err)
		}
		httpSrv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	errc := make(chan error, 1)
	go func() {
		if httpSrv.TLSConfig != nil {
			errc <- httpSrv.ServeTLS(ln, "", "") // the certificate is in TLSConfig
			return
		}
		errc <- httpSrv.Serve(ln)
	}()
	if err := srv.Start(); err != nil {
		_ = httpSrv.Close()
		return err
	}
	softFiles, _ := fileLimit()
	log.Info("kvrouter: serving", "listen", ln.Addr().String(), "tls", cfg.Security.TLSCertFile != "",
		"admin_token", cfg.Security.AdminToken != "", "api_token", cfg.Security.APIToken != "", "block_size", cfg.BlockSize,
		"workers", len(cfg.Workers), "snapshot", cfg.Snapshot.Path, "bind", cfg.Bind, "open_files_limit", softFiles)

	select {
	case <-ctx.Done():
		log.Info("kvrouter: shutting down")
	case err := <-errc:
		_ = srv.Shutdown(context.Background())
		return fmt.Errorf("http: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	var errs []error
	if err := httpSrv.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("draining HTTP: %w", err))
	}
	if err := srv.Shutdown(sctx); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		log.Info("kvrouter: stopped cleanly")
	}
	return errors.Join(errs...)
}
