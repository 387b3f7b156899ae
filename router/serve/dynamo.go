package serve

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

// Dynamo's standalone KV indexer's HTTP API (dynamo-kv-indexer, and
// `python -m dynamo.indexer` in Dynamo's wheel), answered the same way so
// its clients work unchanged: the same paths, request fields (unknown ones
// ignored, as serde does), response shapes, statuses and error bodies
// ({"error": "text"}). Its routing_group is kvrouter's tenant, "default"
// being kvrouter's "" (so both APIs share one index); its legacy tenant_id
// is accepted and ignored, as Dynamo does.

const dynamoDefaultGroup = indexer.DefaultTenant

func groupToTenant(g string) string { return indexer.CanonicalTenant(g) }

func tenantToGroup(t string) string {
	if t == "" {
		return dynamoDefaultGroup
	}
	return t
}

// dynamoError is an error in Dynamo's shape.
type dynamoError struct {
	status int
	msg    string
}

func (e *dynamoError) Error() string { return e.msg }

func dynErr(status int, format string, args ...any) *dynamoError {
	return &dynamoError{status: status, msg: fmt.Sprintf(format, args...)}
}

// dynamoHandler adapts a handler returning an error to Dynamo's error
// body.
func (s *Server) dynamoHandler(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var de *dynamoError
		var ae *apiError
		switch {
		case errors.As(err, &de):
		case errors.As(err, &ae):
			de = &dynamoError{status: ae.Status, msg: ae.Message}
		default:
			de = &dynamoError{status: http.StatusInternalServerError, msg: err.Error()}
		}
		writeJSON(w, de.status, map[string]string{"error": de.msg})
	}
}

// decodeDynamo decodes like axum's Json extractor: a syntax error is a
// 400, a body that does not fit the request type (wrong type, missing
// field) a 422; unknown fields are ignored.
func (s *Server) decodeDynamo(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, s.cfg.Limits.MaxBodyBytes)
	if err != nil {
		return err
	}
	return decodeDynamoBody(body, v)
}

// decodeDynamoBody is decodeDynamo's decoding, of a body already read.
func decodeDynamoBody(body []byte, v any) error {
	if err := decodeLenient(body, v); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code != "invalid_json" && ae.Code != "trailing_data" {
			return dynErr(http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type: %s", ae.Message)
		}
		return dynErr(http.StatusBadRequest, "Failed to parse the request body as JSON: %v", err)
	}
	return nil
}

func missing(name string) error {
	return dynErr(http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type: missing field `%s`", name)
}

type dynRegisterRequest struct {
	InstanceID     *uint64 `json:"instance_id"`
	Endpoint       *string `json:"endpoint"`
	ModelName      *string `json:"model_name"`
	RoutingGroup   *string `json:"routing_group"`
	TenantID       *string `json:"tenant_id"` // accepted, ignored (Dynamo's legacy name)
	BlockSize      *uint32 `json:"block_size"`
	DPRank         *uint32 `json:"dp_rank"`
	ReplayEndpoint *string `json:"replay_endpoint"`
	AdditionalSalt *string `json:"additional_salt"` // accepted, ignored, as Dynamo does
}

func (req *dynRegisterRequest) check() error {
	switch {
	case req.InstanceID == nil:
		return missing("instance_id")
	case req.Endpoint == nil:
		return missing("endpoint")
	case req.ModelName == nil:
		return missing("model_name")
	case *req.ModelName == "":
		// kvrouter's /v1/workers refuses it too: one registry, one rule.
		return dynErr(http.StatusBadRequest, "model_name is empty")
	case req.BlockSize == nil:
		return missing("block_size")
	}
	return nil
}

func group(g *string) string {
	if g == nil {
		return dynamoDefaultGroup
	}
	return *g
}

func (s *Server) dynRegister(w http.ResponseWriter, r *http.Request) error {
	var req dynRegisterRequest
	if err := s.decodeDynamo(w, r, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	id, model, grp := *req.InstanceID, *req.ModelName, group(req.RoutingGroup)
	if err := s.checkLabels(label{"model", model}, label{"tenant", grp}); err != nil {
		return err
	}
	var replay string
	if req.ReplayEndpoint != nil {
		replay = *req.ReplayEndpoint
	}
	if err := checkEndpoint("endpoint", *req.Endpoint); err != nil {
		return dynErr(http.StatusBadRequest, "invalid ZMQ endpoint: %v", err)
	}
	if err := checkEndpoint("replay_endpoint", replay); err != nil {
		return dynErr(http.StatusBadRequest, "invalid ZMQ endpoint: %v", err)
	}
	if err := s.checkEndpointHosts(*req.Endpoint, replay); err != nil {
		return dynErr(http.StatusBadRequest, "%v", err)
	}
	if int(*req.BlockSize) != s.cfg.BlockSize {
		return dynErr(http.StatusConflict, "block_size mismatch for model=%s routing_group=%s: existing=%d, requested=%d",
			model, grp, s.cfg.BlockSize, *req.BlockSize)
	}
	rank := uint32(0)
	if req.DPRank != nil {
		rank = *req.DPRank
	}
	if rank >= 1024 {
		return dynErr(http.StatusBadRequest, "dp_rank %d: at most 1023", rank)
	}
	// kvrouter subscribes an engine's ranks at rank 0's port + r (as vLLM
	// and SGLang bind them): a rank's endpoint names rank 0's.
	base, err := baseEndpoint(*req.Endpoint, rank)
	if err != nil {
		return dynErr(http.StatusBadRequest, "%v", err)
	}
	baseReplay, err := baseEndpoint(replay, rank)
	if err != nil {
		return dynErr(http.StatusBadRequest, "%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	spec := indexer.WorkerSpec{WorkerID: id, Model: model, Tenant: groupToTenant(grp), Endpoint: base,
		ReplayEndpoint: baseReplay, DPSize: int(rank) + 1}
	shown := map[uint32]bool{rank: true}
	if info, ok := s.ix.Worker(id); ok {
		if info.Spec.Model != model || tenantToGroup(info.Spec.Tenant) != grp {
			return dynErr(http.StatusConflict, "instance %d is already registered for model=%s routing_group=%s",
				id, info.Spec.Model, tenantToGroup(info.Spec.Tenant))
		}
		if _, dup := s.endpoints[id][rank]; dup {
			return dynErr(http.StatusConflict, "instance %d dp_rank %d already registered", id, rank)
		}
		if info.Spec.Endpoint != base {
			return dynErr(http.StatusBadRequest, "instance %d dp_rank %d: kvrouter subscribes rank r at rank 0's port + r; "+
				"this endpoint implies rank 0 at %s, but it is at %s", id, rank, base, info.Spec.Endpoint)
		}
		for r := range s.endpoints[id] {
			shown[r] = true
		}
		spec = info.Spec
		spec.DPSize = max(spec.DPSize, int(rank)+1)
		if spec.ReplayEndpoint == "" {
			spec.ReplayEndpoint = baseReplay
		}
	}
	streams, err := rankStreams(spec, shown)
	if err != nil {
		return err
	}
	if _, err := s.registerLocked(spec, streams); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]string{"status": "ok"})
	return nil
}

// baseEndpoint is rank 0's endpoint given rank r's: the inverse of
// ingest.RankEndpoint (tcp port - r, or an ipc/inproc name without its
// "_dp<r>").
func baseEndpoint(endpoint string, r uint32) (string, error) {
	if endpoint == "" || r == 0 {
		return endpoint, nil
	}
	cand, ok := strings.CutSuffix(endpoint, "_dp"+strconv.FormatUint(uint64(r), 10))
	if !ok {
		if i := strings.LastIndexByte(endpoint, ':'); i >= 0 {
			if port, err := strconv.ParseUint(endpoint[i+1:], 10, 16); err == nil && port > uint64(r) {
				cand = endpoint[:i+1] + strconv.FormatUint(port-uint64(r), 10)
			}
		}
	}
	if back, err := ingest.RankEndpoint(cand, r); err == nil && back == endpoint {
		return cand, nil
	}
	return "", fmt.Errorf("invalid ZMQ endpoint %q for dp_rank %d: want tcp://host:port with port above %d, or an ipc/inproc name ending in _dp%d",
		endpoint, r, r, r)
}

type dynUnregisterRequest struct {
	InstanceID   *uint64 `json:"instance_id"`
	ModelName    *string `json:"model_name"`
	RoutingGroup *string `json:"routing_group"`
	TenantID     *string `json:"tenant_id"`
	DPRank       *uint32 `json:"dp_rank"`
}

func (s *Server) dynUnregister(w http.ResponseWriter, r *http.Request) error {
	var req dynUnregisterRequest
	if err := s.decodeDynamo(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.InstanceID == nil:
		return missing("instance_id")
	case req.ModelName == nil:
		return missing("model_name")
	case *req.ModelName == "":
		// kvrouter's /v1/workers refuses it too: one registry, one rule.
		return dynErr(http.StatusBadRequest, "model_name is empty")
	}
	if err := s.checkLabels(label{"model", *req.ModelName}, label{"tenant", group(req.RoutingGroup)}); err != nil {
		return err
	}
	id := *req.InstanceID
	s.mu.Lock()
	defer s.mu.Unlock()
	info, ok := s.ix.Worker(id)
	if !ok {
		return dynErr(http.StatusNotFound, "instance %d not found", id)
	}
	grp := tenantToGroup(info.Spec.Tenant)
	if info.Spec.Model != *req.ModelName || (req.RoutingGroup != nil && *req.RoutingGroup != grp) {
		return dynErr(http.StatusNotFound, "instance %d is registered for model=%s routing_group=%s", id, info.Spec.Model, grp)
	}
	streams := s.endpoints[id]
	if req.DPRank != nil && req.RoutingGroup != nil {
		rank := *req.DPRank
		if _, ok := streams[rank]; !ok {
			return dynErr(http.StatusNotFound, "instance %d dp_rank %d not found", id, rank)
		}
		if len(streams) > 1 {
			return s.dropRankLocked(w, info, rank)
		}
	}
	s.unsubscribeLocked(info.Spec)
	s.ix.RemoveWorker(id)
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// dropRankLocked unregisters one rank of a worker that keeps others: its
// blocks go. The highest rank's stream stops (the worker resubscribes with
// fewer ranks); a lower rank's stream goes on, as ranks are subscribed
// 0..dp_size-1, and its new events come back into the index.
func (s *Server) dropRankLocked(w http.ResponseWriter, info indexer.WorkerInfo, rank uint32) error {
	id := info.Spec.WorkerID
	shown := map[uint32]bool{}
	top := uint32(0)
	for r := range s.endpoints[id] {
		if r != rank {
			shown[r] = true
			top = max(top, r)
		}
	}
	spec := info.Spec
	spec.DPSize = int(top) + 1
	streams, err := rankStreams(spec, shown)
	if err != nil {
		return err
	}
	if _, err := s.registerLocked(spec, streams); err != nil {
		return err
	}
	// A rank at or above the new dp_size went with its blocks as the
	// worker shrank; a lower one is cleared.
	if int(rank) < spec.DPSize {
		if err := s.ix.ApplyEvent(id, core.Event{Kind: core.EventCleared, DPRank: rank}); err != nil {
			return dynErr(http.StatusInternalServerError, "clearing instance %d dp_rank %d: %v", id, rank, err)
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

type dynListener struct {
	Endpoint string `json:"endpoint"`
	Status   string `json:"status"`
}

type dynWorker struct {
	InstanceID   uint64                 `json:"instance_id"`
	Source       string                 `json:"source"`
	Status       string                 `json:"status"`
	ModelName    string                 `json:"model_name"`
	RoutingGroup string                 `json:"routing_group"`
	BlockSize    int                    `json:"block_size"`
	Endpoints    map[string]string      `json:"endpoints"`
	Listeners    map[string]dynListener `json:"listeners"`
}

func (s *Server) dynWorkers(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	out := []dynWorker{}
	for _, info := range s.ix.Workers() {
		grp := tenantToGroup(info.Spec.Tenant)
		if (q.Has("model_name") && q.Get("model_name") != info.Spec.Model) ||
			(q.Has("routing_group") && q.Get("routing_group") != grp) {
			continue
		}
		dw := dynWorker{InstanceID: info.Spec.WorkerID, Source: "zmq", Status: "active", ModelName: info.Spec.Model,
			RoutingGroup: grp, BlockSize: s.cfg.BlockSize, Endpoints: map[string]string{}, Listeners: map[string]dynListener{}}
		streams := s.streamsOf(info.Spec.WorkerID)
		if len(streams) == 0 {
			dw.Source = "http" // a publisher of POST /v1/events, or one found on the bound endpoint
		}
		connected := map[uint32]bool{}
		for _, ri := range info.Ranks {
			connected[ri.Worker.DPRank] = ri.Connected
		}
		for rank, st := range streams {
			key := strconv.FormatUint(uint64(rank), 10)
			dw.Endpoints[key] = st.Endpoint
			status := "pending"
			if connected[rank] {
				status = "active"
			}
			dw.Listeners[key] = dynListener{Endpoint: st.Endpoint, Status: status}
		}
		out = append(out, dw)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type dynQueryRequest struct {
	TokenIDs     *tokenList `json:"token_ids"`
	ModelName    *string    `json:"model_name"`
	RoutingGroup *string    `json:"routing_group"`
	TenantID     *string    `json:"tenant_id"`
	LoraName     *string    `json:"lora_name"`
	CacheSalt    *string    `json:"cache_salt"`
}

type dynQueryByHashRequest struct {
	BlockHashes  *[]int64 `json:"block_hashes"`
	ModelName    *string  `json:"model_name"`
	RoutingGroup *string  `json:"routing_group"`
	TenantID     *string  `json:"tenant_id"`
	CacheSalt    *string  `json:"cache_salt"`
}

// dynInstance is Dynamo's per-instance summary (Mooncake RFC 1403): token
// counts; without tiers in the index the cpu and disk figures, which
// Dynamo reports cumulatively, equal the gpu one.
type dynInstance struct {
	LongestMatched uint64            `json:"longest_matched"`
	GPU            uint64            `json:"gpu"`
	DP             map[string]uint64 `json:"dp"`
	CPU            uint64            `json:"cpu"`
	Disk           uint64            `json:"disk"`
}

type dynScores struct {
	Scores      map[string]map[string]uint64 `json:"scores"`
	Frequencies []uint64                     `json:"frequencies"`
	Instances   map[string]dynInstance       `json:"instances"`
}

func (s *Server) dynQuery(w http.ResponseWriter, r *http.Request) error {
	// The body and the token ids are garbage once the prompt is hashed
	// (strings are copied out): pooled buffers, as the route path's.
	in := bufPool.Get().(*[]byte)
	defer bufPool.Put(in)
	body, err := readBodyInto((*in)[:0], w, r, s.cfg.Limits.MaxBodyBytes)
	*in = body
	if err != nil {
		return err
	}
	tp := tokenPool.Get().(*[]uint32)
	defer tokenPool.Put(tp)
	req, ok := readDynQuery(body, *tp)
	if !ok {
		req = dynQueryRequest{}
		if err := decodeDynamoBody(body, &req); err != nil {
			return err
		}
	} else if req.TokenIDs != nil && cap(*req.TokenIDs) > cap(*tp) && cap(*req.TokenIDs) <= maxPooledTokens {
		*tp = (*req.TokenIDs)[:0] // grown: keep the larger buffer
	}
	switch {
	case req.TokenIDs == nil:
		return missing("token_ids")
	case req.ModelName == nil:
		return missing("model_name")
	case *req.ModelName == "":
		// kvrouter's /v1/workers refuses it too: one registry, one rule.
		return dynErr(http.StatusBadRequest, "model_name is empty")
	}
	if err := s.checkLabels(label{"model", *req.ModelName}, label{"tenant", group(req.RoutingGroup)}); err != nil {
		return err
	}
	if err := checkTokens(len(*req.TokenIDs), s.cfg.Limits.MaxTokens); err != nil {
		return err
	}
	var po indexer.PromptOptions
	if req.LoraName != nil {
		po.LoraName = *req.LoraName
	}
	if req.CacheSalt != nil {
		po.CacheSalt = *req.CacheSalt
	}
	local, err := s.ix.HashPrompt(*req.TokenIDs, po)
	if err != nil {
		return dynErr(http.StatusBadRequest, "%v", err)
	}
	return s.dynAnswer(w, *req.ModelName, group(req.RoutingGroup), local)
}

func (s *Server) dynQueryByHash(w http.ResponseWriter, r *http.Request) error {
	var req dynQueryByHashRequest
	if err := s.decodeDynamo(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.BlockHashes == nil:
		return missing("block_hashes")
	case req.ModelName == nil:
		return missing("model_name")
	case *req.ModelName == "":
		// kvrouter's /v1/workers refuses it too: one registry, one rule.
		return dynErr(http.StatusBadRequest, "model_name is empty")
	case req.CacheSalt != nil:
		return dynErr(http.StatusBadRequest, "cache_salt is not accepted by /query_by_hash; block_hashes must already include the intended cache salt")
	}
	if err := s.checkLabels(label{"model", *req.ModelName}, label{"tenant", group(req.RoutingGroup)}); err != nil {
		return err
	}
	if err := checkTokens(len(*req.BlockHashes)*s.cfg.BlockSize, s.cfg.Limits.MaxTokens); err != nil {
		return err
	}
	local := make([]uint64, len(*req.BlockHashes))
	for i, h := range *req.BlockHashes {
		local[i] = uint64(h) // Dynamo's wire is i64: the bits are the hash
	}
	return s.dynAnswer(w, *req.ModelName, group(req.RoutingGroup), local)
}

// dynAnswer scores local hashes as Dynamo does: every rank of the index
// whatever its state (the index as it is), in tokens.
func (s *Server) dynAnswer(w http.ResponseWriter, model, grp string, local []uint64) error {
	key := indexer.ModelKey{Model: model, Tenant: groupToTenant(grp)}
	overlaps, err := s.ix.Overlaps(key, local, true)
	if errors.Is(err, indexer.ErrUnknownModel) {
		return dynErr(http.StatusNotFound, "no indexer for model=%s routing_group=%s", model, grp)
	}
	if err != nil {
		return err
	}
	bs := uint64(s.cfg.BlockSize)
	out := dynScores{Scores: map[string]map[string]uint64{}, Frequencies: []uint64{}, Instances: map[string]dynInstance{}}
	for _, o := range overlaps {
		if o.Blocks == 0 {
			continue
		}
		id := strconv.FormatUint(o.Worker.ID, 10)
		rank := strconv.FormatUint(uint64(o.Worker.DPRank), 10)
		tokens := uint64(o.Blocks) * bs
		if out.Scores[id] == nil {
			out.Scores[id] = map[string]uint64{}
		}
		out.Scores[id][rank] = tokens
		inst, ok := out.Instances[id]
		if !ok {
			inst.DP = map[string]uint64{}
		}
		inst.DP[rank] = tokens
		inst.LongestMatched = max(inst.LongestMatched, tokens)
		inst.GPU, inst.CPU, inst.Disk = inst.LongestMatched, inst.LongestMatched, inst.LongestMatched
		out.Instances[id] = inst
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type dynDumpEntry struct {
	BlockSize int               `json:"block_size"`
	Events    []json.RawMessage `json:"events"`
}

func (s *Server) dynDump(w http.ResponseWriter, _ *http.Request) error {
	out := map[string]dynDumpEntry{}
	keys := s.ix.Models()
	slices.SortFunc(keys, func(a, b indexer.ModelKey) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Tenant, b.Tenant))
	})
	for _, k := range keys {
		evs, err := s.ix.Dump(k)
		if errors.Is(err, indexer.ErrUnknownModel) {
			continue // dropped meanwhile
		}
		if err != nil {
			return err
		}
		entry := dynDumpEntry{BlockSize: s.cfg.BlockSize, Events: make([]json.RawMessage, 0, len(evs))}
		for _, ev := range evs {
			b, err := ev.MarshalJSON()
			if err != nil {
				return err
			}
			entry.Events = append(entry.Events, b)
		}
		out[k.Model+":"+tenantToGroup(k.Tenant)] = entry
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
