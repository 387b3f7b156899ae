package serve

import (
	"net"
	"strconv"
	"strings"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// resolveTopic names the worker of a message on the bound endpoint from
// its topic, first match wins:
//
//  1. the topic a registered worker was given (its "topic" field);
//  2. llm-d's "kv@<pod-ip>:<port>@<model>": the registered worker of that
//     model whose endpoint is tcp://<pod-ip>:<port>; else a worker first
//     seen here, its id a hash of the pod address (stable across router
//     restarts), registered by the indexer with the topic's model;
//  3. a bare worker id ("7"), or "<model>@<id>", the model defaulting to
//     --bind-model.
//
// Other topics are unknown: ingest counts and skips them.
func (s *Server) resolveTopic(topic string) (ingest.Source, bool) {
	endpoint := s.cfg.Bind
	for _, info := range s.ix.Workers() {
		if info.Spec.Topic != "" && info.Spec.Topic == topic {
			return ingest.Source{Model: info.Spec.Model, WorkerID: info.Spec.WorkerID, Endpoint: endpoint, Topic: topic}, true
		}
	}
	if pod, model, ok := ingest.ParseLLMDTopic(topic); ok {
		want := "tcp://" + pod
		for _, info := range s.ix.Workers() {
			if info.Spec.Model == model && info.Spec.Endpoint == want {
				return ingest.Source{Model: model, WorkerID: info.Spec.WorkerID, Endpoint: endpoint, Topic: topic}, true
			}
		}
		if _, _, err := net.SplitHostPort(pod); err != nil {
			return ingest.Source{}, false
		}
		return ingest.Source{Model: model, WorkerID: core.RawHash([]byte(pod)), Endpoint: endpoint, Topic: topic}, true
	}
	model, idText, found := strings.Cut(topic, "@")
	if !found {
		model, idText = s.cfg.BindModel, topic
	}
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil || model == "" {
		return ingest.Source{}, false
	}
	return ingest.Source{Model: model, WorkerID: id, Endpoint: endpoint, Topic: topic}, true
}

// boundReplay gives a bound-endpoint worker's replay endpoint: the one it
// was registered with, if any.
func (s *Server) boundReplay(src ingest.Source) string {
	if info, ok := s.ix.Worker(src.WorkerID); ok {
		rep, err := ingest.RankEndpoint(info.Spec.ReplayEndpoint, src.DPRank)
		if err == nil {
			return rep
		}
	}
	return ""
}
