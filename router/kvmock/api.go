package kvmock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// maxBodyBytes bounds a request body: a 128k-token prompt as JSON ids is
// about 1 MiB; anything near this limit is a mistake.
const maxBodyBytes = 32 << 20

// api serves vLLM's OpenAI-compatible surface for one engine.
type api struct {
	engine  *Engine
	cfg     Config
	log     *slog.Logger
	created int64
	metrics *metrics
	health  *HealthSwitch
}

// NewHandler returns the HTTP API of an engine:
//
//	POST /v1/completions, POST /v1/chat/completions, POST /tokenize,
//	GET /health, GET /v1/models, GET /metrics, POST /reset_prefix_cache,
//	GET /kvmock/stats, POST /kvmock/health
//
// health may be nil (always healthy).
func NewHandler(e *Engine, health *HealthSwitch, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	if health == nil {
		health = &HealthSwitch{}
	}
	a := &api{engine: e, cfg: e.Config(), log: log, created: time.Now().Unix(), metrics: newMetrics(e), health: health}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", a.completions)
	mux.HandleFunc("POST /v1/chat/completions", a.chatCompletions)
	mux.HandleFunc("POST /tokenize", a.tokenize)
	mux.HandleFunc("GET /health", a.healthCheck)
	mux.HandleFunc("GET /v1/models", a.models)
	mux.Handle("GET /metrics", a.metrics.handler())
	mux.HandleFunc("POST /reset_prefix_cache", a.resetPrefixCache)
	mux.HandleFunc("GET /kvmock/stats", a.stats)
	mux.HandleFunc("POST /kvmock/health", a.setHealth)
	// Everything else: a known path with another method is a 405, as
	// in vLLM (FastAPI), anything else a 404, both as OpenAI JSON.
	known := map[string]string{
		"/v1/completions": "POST", "/v1/chat/completions": "POST", "/tokenize": "POST",
		"/health": "GET", "/v1/models": "GET", "/metrics": "GET", "/reset_prefix_cache": "POST",
		"/kvmock/stats": "GET", "/kvmock/health": "POST",
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if method, ok := known[r.URL.Path]; ok {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	return recoverPanics(mux, log)
}

// recoverPanics turns a handler panic into a 500 and a log line: one bad
// request must never take the engine down.
func recoverPanics(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
					panic(v)
				}
				log.Error("handler panic", "path", r.URL.Path, "panic", v)
				writeError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, err
		}
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}

// checkModel resolves a request's model name: the base model ("" too) or
// one of its LoRA adapters (lora tells which). Any other name is a 404, as
// in vLLM.
func (a *api) checkModel(w http.ResponseWriter, model string) (lora SeqTag, ok bool) {
	if model == "" || model == a.cfg.Model {
		return SeqTag{}, true
	}
	for i, name := range a.cfg.LoRAModules {
		if model == name {
			return SeqTag{LoraName: name, LoraID: i + 1}, true
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", model))
	return SeqTag{}, false
}

func (a *api) completions(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	p, err := decodeCompletion(body, a.engine.Tokenizer(), a.cfg.DefaultMaxTokens)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	a.generate(w, r, p, completionFlavor{})
}

func (a *api) chatCompletions(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	p, err := decodeChat(body, a.engine.Tokenizer(), a.cfg.DefaultMaxTokens)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	a.generate(w, r, p, chatFlavor{})
}

func (a *api) tokenize(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	model, ids, err := decodeTokenize(body, a.engine.Tokenizer())
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	if _, ok := a.checkModel(w, model); !ok {
		return
	}
	if ids == nil {
		ids = []uint32{}
	}
	writeJSON(w, tokenizeResponse{Count: len(ids), MaxModelLen: a.cfg.MaxModelLen, Tokens: ids})
}

// models lists the base model and its LoRA adapters, as vLLM does (an
// adapter's parent is the base model).
func (a *api) models(w http.ResponseWriter, _ *http.Request) {
	cards := []modelCard{{
		ID: a.cfg.Model, Object: "model", Created: a.created, OwnedBy: "vllm",
		Root: a.cfg.Model, MaxModelLen: a.cfg.MaxModelLen,
	}}
	for _, name := range a.cfg.LoRAModules {
		cards = append(cards, modelCard{ID: name, Object: "model", Created: a.created, OwnedBy: "vllm",
			Root: name, Parent: a.cfg.Model, MaxModelLen: a.cfg.MaxModelLen})
	}
	writeJSON(w, modelList{Object: "list", Data: cards})
}

func (a *api) resetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	if err := a.engine.ResetPrefixCache(); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reset prefix cache: %v", err))
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (a *api) stats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, a.engine.State())
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("encode response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
