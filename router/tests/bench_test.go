package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/ingest/ingesttest"
	"github.com/kvhash/kvhash/router/serve"
)

// kvrouter's figures (make bench-router, which prints each against its
// target). One core for ingestion (-cpu 1 in the make target); routing
// uses the machine.

const benchBlockSize = 16

// BenchmarkIngest is the ingestion path of one engine stream on one
// core: vLLM-format MessagePack batches decoded (router/ingest), each
// block's canonical hash computed from its tokens and applied to the index
// (router/indexer over core). 8 prefills of 16 blocks a batch, one remove
// every 4 events; map events with int hashes, and array events with bytes
// hashes (vLLM's sha256 digests).
func BenchmarkIngest(b *testing.B) {
	for _, v := range []struct {
		name   string
		layout ingesttest.Layout
		bytes  bool
	}{{"map-int", ingesttest.MapEvents, false}, {"array-bytes", ingesttest.ArrayEvents, true}} {
		b.Run(v.name, func(b *testing.B) {
			spec := ingesttest.DefaultSpec(v.layout)
			spec.BytesHashes, spec.RemoveEvery = v.bytes, 4
			gen := ingesttest.NewGenerator(spec)
			ix, err := indexer.New(indexer.Options{BlockSize: spec.BlockSize})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: 1, Model: "m"}); err != nil {
				b.Fatal(err)
			}
			src := ingest.Source{Model: "m", WorkerID: 1}
			dec := ingest.NewDecoder()
			const chunk = 512
			payloads := gen.Payloads(chunk)
			b.SetBytes(int64(len(payloads[0])))
			var cpu time.Duration // CPU time of the measured part only
			cpu0 := processCPU()
			b.ResetTimer()
			for i := range b.N {
				if i%chunk == 0 && i > 0 {
					b.StopTimer()
					cpu += processCPU() - cpu0
					payloads = gen.Payloads(chunk)
					cpu0 = processCPU()
					b.StartTimer()
				}
				batch, _, err := dec.DecodeBatch("", uint64(i), payloads[i%chunk])
				if err != nil {
					b.Fatal(err)
				}
				ix.HandleBatch(src, batch)
			}
			cpu += processCPU() - cpu0
			b.ReportMetric(float64(b.N*gen.BlocksPerBatch())/b.Elapsed().Seconds(), "blocks/s")
			// Per CPU second: the same figure whatever else the machine runs.
			b.ReportMetric(float64(b.N*gen.BlocksPerBatch())/cpu.Seconds(), "blocks/cpu-s")
			if info, _ := ix.Worker(1); info.Ranks[0].Events[indexer.KindStored][indexer.OutcomeApplied] == 0 {
				b.Fatal("nothing was applied")
			}
		})
	}
}

// BenchmarkRouteHTTP is routing over real HTTP on 127.0.0.1 with 128
// workers, while engine batches stream into the index at 100k blocks/s
// (decoded and applied in-process, as the ZeroMQ subscribers do). Each op
// is one POST /v1/route of a 512-token prompt that shares a cached prefix
// with the fleet; the router's load bookkeeping runs (requests expire
// after 2 s instead of being freed, so an op is one HTTP call). The
// clients share the 2 cores with the server, so they are kept light: one
// keep-alive connection each, requests pre-encoded (httpClientConn).
func BenchmarkRouteHTTP(b *testing.B) {
	const workers, promptBlocks, streamRate = 128, 32, 100_000
	srv := startRouteServer(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	ix := srv.Indexer()
	prompts := warmFleet(b, ix, workers, promptBlocks)
	payloads := cachedStreamPayloads(workers, 64) // 128 x 64 batches of 128 blocks: 10 s at 100k blocks/s
	blocksPerBatch := ingesttest.NewGenerator(ingesttest.DefaultSpec(ingesttest.MapEvents)).BlocksPerBatch()
	stop := make(chan struct{})
	var streamed sync.WaitGroup
	streamed.Go(func() { streamEvents(ix, payloads, blocksPerBatch, streamRate, stop) })

	// The client is light, so that the 2 cores measure the server: each
	// goroutine keeps one connection alive and writes pre-encoded requests
	// (headers and body in one write), then reads the status line, the
	// headers and Content-Length bytes of answer (httpClientConn).
	reqs := make([][]byte, len(prompts))
	for i, p := range prompts {
		body, _ := json.Marshal(map[string]any{"model": "m", "token_ids": p})
		reqs[i] = append([]byte("POST /v1/route HTTP/1.1\r\nHost: kvrouter\r\nContent-Type: application/json\r\nContent-Length: "+
			strconv.Itoa(len(body))+"\r\n\r\n"), body...)
	}
	addr := ln.Addr().String()
	var mu sync.Mutex
	var lat []time.Duration
	// One client per core: a closed loop that already saturates the
	// server (measured: 22.6-24.0k routes/s with 1 per core, 22.9k with 4
	// per core), where more clients only queue (p50 37 µs -> 217 µs).
	b.SetParallelism(1)
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		local := make([]time.Duration, 0, 1024)
		conn, err := dialHTTP(addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.close()
		i := 0
		for pb.Next() {
			i++
			start := time.Now()
			if err := conn.roundTrip(reqs[i%len(reqs)]); err != nil {
				b.Error(err)
				return
			}
			local = append(local, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, local...)
		mu.Unlock()
	})
	elapsed := b.Elapsed()
	cpu := processCPU() - cpu0
	b.StopTimer()
	close(stop)
	streamed.Wait()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "routes/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		// The process's CPU per route (server, HTTP client and the event
		// stream together): what a route costs whatever else the machine
		// runs, and so the capacity of this many idle cores.
		perRoute := cpu.Seconds() / float64(len(lat))
		b.ReportMetric(perRoute*1e6, "cpu-µs/route")
		b.ReportMetric(float64(runtime.GOMAXPROCS(0))/perRoute, "routes/s-at-full-cpu")
	}
}

// httpClientConn is one keep-alive HTTP/1.1 connection that sends
// pre-encoded requests and reads answers framed by Content-Length (as
// kvrouter's route answers are): the least client work per route.
type httpClientConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialHTTP(addr string) (*httpClientConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &httpClientConn{c: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

func (h *httpClientConn) close() { _ = h.c.Close() }

// roundTrip writes req and reads one answer, which must be a 200 with a
// Content-Length.
func (h *httpClientConn) roundTrip(req []byte) error {
	if _, err := h.c.Write(req); err != nil {
		return fmt.Errorf("write request: %w", err)
	}
	status, err := h.r.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("read status: %w", err)
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("route: %q", bytes.TrimSpace(status))
	}
	length := -1
	for {
		line, err := h.r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("read header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(name), "Content-Length") {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return fmt.Errorf("content-length %q: %w", value, err)
			}
		}
	}
	if length < 0 {
		return errors.New("answer without Content-Length")
	}
	if _, err := h.r.Discard(length); err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	return nil
}

// startRouteServer starts the router the route benchmarks measure, in
// warn mode, its requests expiring after 2 s instead of being freed (an op
// is one call); it shuts down when the benchmark ends.
func startRouteServer(b *testing.B) *serve.Server {
	b.Helper()
	cfg := config.Default()
	cfg.BlockSize = benchBlockSize
	cfg.Index.StabilityMode = "warn"
	cfg.Routing.RequestTTL = 2 * time.Second
	srv, err := serve.New(serve.Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv
}

// BenchmarkRouteHandler is the server's own work per route, without the
// network: POST /v1/route through the HTTP handler (decode, score 128
// workers, record the load, encode the decision) on one goroutine, in
// CPU time per route.
func BenchmarkRouteHandler(b *testing.B) {
	const workers, promptBlocks = 128, 32
	srv := startRouteServer(b)
	prompts := warmFleet(b, srv.Indexer(), workers, promptBlocks)
	bodies := make([][]byte, len(prompts))
	for i, p := range prompts {
		bodies[i], _ = json.Marshal(map[string]any{"model": "m", "token_ids": p})
	}
	h := srv.Handler()
	rec := &discardWriter{header: http.Header{}}
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", "/v1/route", bytes.NewReader(bodies[i%len(bodies)]))
		req.ContentLength = int64(len(bodies[i%len(bodies)]))
		rec.status = 0
		h.ServeHTTP(rec, req)
		if rec.status != 200 {
			b.Fatalf("route: %d", rec.status)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/route")
}

// discardWriter is an http.ResponseWriter that keeps only the status.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) { w.status = code }

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return len(p), nil
}

// warmFleet gives each worker a cached 512-token prompt sharing a
// 256-token system prefix, and returns prompts that hit them.
func warmFleet(b *testing.B, ix *indexer.Indexer, workers, promptBlocks int) [][]uint32 {
	b.Helper()
	prompts := make([][]uint32, workers)
	for w := range workers {
		if _, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: uint64(w + 1), Model: "m"}); err != nil {
			b.Fatal(err)
		}
		p := make([]uint32, promptBlocks*benchBlockSize)
		for i := range p {
			if i < len(p)/2 {
				p[i] = uint32(i + 1) // the shared system prompt
			} else {
				p[i] = uint32(1_000_000*(w+1) + i)
			}
		}
		prompts[w] = p
		hashes := make([]uint64, promptBlocks)
		for i := range hashes {
			hashes[i] = uint64(w+1)<<40 | uint64(i)
		}
		ix.HandleBatch(ingest.Source{Model: "m", WorkerID: uint64(w + 1)}, &ingest.Batch{Events: []ingest.Event{{
			Kind: ingest.BlockStored, BlockHashes: hashes, TokenIDs: p, BlockSize: benchBlockSize, Medium: "GPU",
		}}})
	}
	return prompts
}

// streamPayloads pre-encodes the event stream (so that encoding it, a
// test cost, stays out of the measured CPU): rounds of one batch per
// worker, enough for seconds at 100k blocks/s.
func streamPayloads(workers, rounds int) [][][]byte {
	spec := ingesttest.DefaultSpec(ingesttest.MapEvents)
	spec.RemoveEvery = 1 // steady state: as many removes as stores
	out := make([][][]byte, workers)
	for w := range out {
		s := spec
		s.Seed = uint64(w + 7)
		out[w] = ingesttest.NewGenerator(s).Payloads(rounds)
	}
	return out
}

var streamPayloadsCache struct {
	once     sync.Once
	payloads [][][]byte
}

// cachedStreamPayloads is streamPayloads made once per process: the
// testing package calls a benchmark several times (b.N rising), and
// encoding the stream took longer than the measurement.
func cachedStreamPayloads(workers, rounds int) [][][]byte {
	streamPayloadsCache.once.Do(func() { streamPayloadsCache.payloads = streamPayloads(workers, rounds) })
	return streamPayloadsCache.payloads
}

// streamEvents feeds every worker's stream, round robin, at rate blocks/s
// until stop: vLLM payloads decoded and applied as the subscribers do.
// Past the pre-encoded rounds it starts over (re-stores: still work).
func streamEvents(ix *indexer.Indexer, payloads [][][]byte, blocksPerBatch, rate int, stop <-chan struct{}) {
	workers := len(payloads)
	dec := ingest.NewDecoder()
	interval := time.Duration(float64(time.Second) * float64(blocksPerBatch) / float64(rate))
	next := time.Now()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		w, round := i%workers, i/workers
		p := payloads[w][round%len(payloads[w])]
		if batch, _, err := dec.DecodeBatch("", uint64(round), p); err == nil {
			ix.HandleBatch(ingest.Source{Model: "m", WorkerID: uint64(w + 1)}, batch)
		}
		next = next.Add(interval)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
	}
}

// BenchmarkMemoryPerBlock is the router's memory per indexed (worker,
// block) pair: 64 workers of 4096 blocks each, half of every worker's
// blocks shared with the others (a common system prompt), measured as Go
// heap in use and as the process's resident set growth.
func BenchmarkMemoryPerBlock(b *testing.B) {
	const workers, blocksPerWorker, shared = 64, 4096, 2048
	for range b.N {
		debug.FreeOSMemory()
		heap0, rss0 := heapInUse(), residentBytes()
		ix, err := indexer.New(indexer.Options{BlockSize: benchBlockSize})
		if err != nil {
			b.Fatal(err)
		}
		toks := make([]uint32, blocksPerWorker*benchBlockSize)
		hashes := make([]uint64, blocksPerWorker)
		for w := range workers {
			if _, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: uint64(w + 1), Model: "m"}); err != nil {
				b.Fatal(err)
			}
			for i := range toks {
				if i < shared*benchBlockSize {
					toks[i] = uint32(i + 1)
				} else {
					toks[i] = uint32(10_000_000*(w+1) + i)
				}
			}
			for i := range hashes {
				if i < shared {
					hashes[i] = 1<<60 | uint64(i)
				} else {
					hashes[i] = uint64(w+1)<<40 | uint64(i)
				}
			}
			// One store per 256 blocks, chained, as prefills arrive.
			var parent *uint64
			for s := 0; s < blocksPerWorker; s += 256 {
				ix.HandleBatch(ingest.Source{Model: "m", WorkerID: uint64(w + 1)}, &ingest.Batch{Seq: uint64(s), Events: []ingest.Event{{
					Kind: ingest.BlockStored, BlockHashes: hashes[s : s+256], ParentHash: parent,
					TokenIDs: toks[s*benchBlockSize : (s+256)*benchBlockSize], BlockSize: benchBlockSize, Medium: "GPU",
				}}})
				p := hashes[s+255]
				parent = &p
			}
		}
		runtime.GC()
		heap1, rss1 := heapInUse(), residentBytes()
		pairs := float64(workers * blocksPerWorker)
		if got := ix.Sizes()[0].Pairs; got != uint64(pairs) {
			b.Fatalf("indexed %d pairs, want %v", got, pairs)
		}
		b.ReportMetric(float64(heap1-heap0)/pairs, "heap-B/pair")
		if rss0 > 0 {
			b.ReportMetric(float64(rss1-rss0)/pairs, "rss-B/pair")
		}
		runtime.KeepAlive(ix)
	}
}

// processCPU is the process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// residentBytes is the process's resident set (Linux); 0 elsewhere.
func residentBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
