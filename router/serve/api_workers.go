package serve

import (
	"net/http"
	"strconv"
	"time"

	"github.com/kvhash/kvhash/router/indexer"
)

// workerRequest is POST /v1/workers. Pointers tell absent from zero.
type workerRequest struct {
	WorkerID       *uint64 `json:"worker_id"`
	Model          string  `json:"model"`
	Tenant         string  `json:"tenant"`
	Endpoint       string  `json:"endpoint"`
	ReplayEndpoint string  `json:"replay_endpoint"`
	DPSize         int     `json:"dp_size"`
	Topic          string  `json:"topic"`
	BaseURL        string  `json:"base_url"`
	EngineHash     string  `json:"engine_hash"`
}

func (req *workerRequest) spec() (indexer.WorkerSpec, error) {
	if err := requireFields(field("worker_id", req.WorkerID != nil), field("model", req.Model != "")); err != nil {
		return indexer.WorkerSpec{}, err
	}
	return indexer.WorkerSpec{
		WorkerID: *req.WorkerID, Model: req.Model, Tenant: req.Tenant, Endpoint: req.Endpoint,
		ReplayEndpoint: req.ReplayEndpoint, DPSize: req.DPSize, Topic: req.Topic, BaseURL: req.BaseURL,
		EngineHash: req.EngineHash,
	}, nil
}

// decodeWorkerRequest is the body decoder of POST /v1/workers.
func decodeWorkerRequest(body []byte) (indexer.WorkerSpec, error) {
	var req workerRequest
	if err := decodeStrict(body, &req); err != nil {
		return indexer.WorkerSpec{}, err
	}
	return req.spec()
}

func (s *Server) postWorker(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.Limits.MaxBodyBytes)
	if err != nil {
		return err
	}
	spec, err := decodeWorkerRequest(body)
	if err != nil {
		return err
	}
	isNew, err := s.addWorker(spec)
	if err != nil {
		return err
	}
	info, _ := s.ix.Worker(spec.WorkerID)
	status := http.StatusOK
	if isNew {
		status = http.StatusCreated
	}
	writeJSON(w, status, s.workerView(info))
	return nil
}

func (s *Server) deleteWorker(w http.ResponseWriter, r *http.Request) error {
	id, err := pathWorkerID(r)
	if err != nil {
		return err
	}
	if !s.removeWorker(id) {
		return notFound("unknown_worker", "worker %d is not registered", id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"worker_id": id, "status": "removed"})
	return nil
}

func (s *Server) getWorkers(w http.ResponseWriter, _ *http.Request) error {
	infos := s.ix.Workers()
	out := make([]workerView, 0, len(infos))
	for _, info := range infos {
		out = append(out, s.workerView(info))
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": out, "engine_hash_agreement": agreementViews(s.ix.HashAgreements())})
	return nil
}

func (s *Server) getWorker(w http.ResponseWriter, r *http.Request) error {
	id, err := pathWorkerID(r)
	if err != nil {
		return err
	}
	info, ok := s.ix.Worker(id)
	if !ok {
		return notFound("unknown_worker", "worker %d is not registered", id)
	}
	writeJSON(w, http.StatusOK, s.workerView(info))
	return nil
}

func pathWorkerID(r *http.Request) (uint64, error) {
	raw := r.PathValue("worker_id")
	id, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return 0, badRequest("invalid_value", "worker id %q: want an unsigned 64-bit integer", raw)
	}
	return id, nil
}

// workerView is one worker in GET /v1/workers.
type workerView struct {
	WorkerID       uint64     `json:"worker_id"`
	Model          string     `json:"model"`
	Tenant         string     `json:"tenant"`
	Endpoint       string     `json:"endpoint,omitempty"`
	ReplayEndpoint string     `json:"replay_endpoint,omitempty"`
	DPSize         int        `json:"dp_size"`
	Topic          string     `json:"topic,omitempty"`
	BaseURL        string     `json:"base_url,omitempty"`
	EngineHash     string     `json:"engine_hash"` // the configured scheme; each rank's verdict is its engine_hash
	Healthy        bool       `json:"healthy"`
	Ranks          []rankView `json:"ranks"`
}

// rankView is one (worker, dp rank): its trust state, stream position and
// counters.
type rankView struct {
	DPRank         uint32                       `json:"dp_rank"`
	State          string                       `json:"state"`
	Reason         string                       `json:"reason,omitempty"`
	Since          time.Time                    `json:"since"`
	Endpoint       string                       `json:"endpoint,omitempty"`
	ReplayEndpoint string                       `json:"replay_endpoint,omitempty"`
	Connected      bool                         `json:"connected"`
	LastSeq        *uint64                      `json:"last_seq"`
	LastEventAt    *time.Time                   `json:"last_event_at"`
	LagSeconds     float64                      `json:"lag_seconds"`
	Blocks         uint64                       `json:"blocks"`
	Events         map[string]map[string]uint64 `json:"events"`
	Skipped        map[string]uint64            `json:"skipped_blocks"`
	Gaps           uint64                       `json:"gaps_lost"`
	Replayed       uint64                       `json:"gaps_replayed"`
	Restarts       uint64                       `json:"restarts"`
	Malformed      uint64                       `json:"malformed_messages"`
	Quarantines    uint64                       `json:"quarantines"`
	Unstable       bool                         `json:"unstable"`
	Violations     map[string]uint64            `json:"violations"`
	EngineHash     engineHashView               `json:"engine_hash"`
}

func (s *Server) workerView(info indexer.WorkerInfo) workerView {
	sp := info.Spec
	streams := s.streamsOf(sp.WorkerID)
	v := workerView{
		WorkerID: sp.WorkerID, Model: sp.Model, Tenant: sp.Tenant, Endpoint: sp.Endpoint,
		ReplayEndpoint: sp.ReplayEndpoint, DPSize: max(sp.DPSize, 1), Topic: sp.Topic, BaseURL: sp.BaseURL,
		EngineHash: engineHashSetting(sp.EngineHash), Healthy: info.Healthy, Ranks: make([]rankView, 0, len(info.Ranks)),
	}
	for _, ri := range info.Ranks {
		v.Ranks = append(v.Ranks, rankViewOf(ri, streams[ri.Worker.DPRank]))
	}
	return v
}

func rankViewOf(ri indexer.RankInfo, st rankStream) rankView {
	rv := rankView{
		DPRank: ri.Worker.DPRank, State: ri.State.String(), Reason: ri.Reason, Since: ri.Since,
		Endpoint: st.Endpoint, ReplayEndpoint: st.Replay, Connected: ri.Connected, LagSeconds: ri.LagSeconds,
		Blocks: ri.Blocks, Gaps: ri.Gaps, Replayed: ri.Replayed, Restarts: ri.Restarts, Malformed: ri.Malformed,
		Quarantines: ri.Quarantines, Unstable: ri.Unstable, EngineHash: engineHashViewOf(ri.EngineHash),
		Events:     map[string]map[string]uint64{},
		Skipped:    map[string]uint64{},
		Violations: map[string]uint64{},
	}
	if ri.HaveSeq {
		seq := ri.LastSeq
		rv.LastSeq = &seq
	}
	if !ri.LastEventAt.IsZero() {
		at := ri.LastEventAt
		rv.LastEventAt = &at
	}
	for k := range indexer.NumEventKinds {
		byOutcome := map[string]uint64{}
		for o := range indexer.NumOutcomes {
			byOutcome[o.String()] = ri.Events[k][o]
		}
		rv.Events[k.String()] = byOutcome
	}
	for reason := range indexer.NumSkipReasons {
		rv.Skipped[reason.String()] = ri.Skipped[reason]
	}
	for kind, n := range ri.Violations {
		rv.Violations[violationName(kind)] = n
	}
	return rv
}
