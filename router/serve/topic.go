package serve

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

// resolveTopic names the worker of a message on the bound endpoint from
// its topic, first match wins:
//
//  1. the topic a registered worker was given (its "topic" field);
//  2. llm-d's "kv@<pod-ip>:<port>@<model>": the registered worker of that
//     model whose endpoint is tcp://<pod-ip>:<port>; else a worker first
//     seen here, its id a hash of the pod address (stable across router
//     restarts), registered with the topic's model;
//  3. a bare worker id ("7"), or "<model>@<id>", the model defaulting to
//     --bind-model.
//
// A topic that would register a worker (not registered before) must be
// admitted (admitBoundWorker): bounded labels, in --bind-topics when set,
// and at most --bind-max-workers such workers. Other topics are unknown:
// ingest counts and skips them.
func (s *Server) resolveTopic(topic string) (ingest.Source, bool) {
	endpoint := s.cfg.Bind
	infos := s.ix.Workers()
	for _, info := range infos {
		if info.Spec.Topic != "" && info.Spec.Topic == topic {
			return ingest.Source{Model: info.Spec.Model, WorkerID: info.Spec.WorkerID, Endpoint: endpoint, Topic: topic}, true
		}
	}
	var src ingest.Source
	if pod, model, ok := ingest.ParseLLMDTopic(topic); ok {
		want := "tcp://" + pod
		for _, info := range infos {
			if info.Spec.Model == model && info.Spec.Endpoint == want {
				return ingest.Source{Model: model, WorkerID: info.Spec.WorkerID, Endpoint: endpoint, Topic: topic}, true
			}
		}
		if _, _, err := net.SplitHostPort(pod); err != nil {
			return ingest.Source{}, false
		}
		src = ingest.Source{Model: model, WorkerID: core.RawHash([]byte(pod)), Endpoint: endpoint, Topic: topic}
	} else {
		model, idText, found := strings.Cut(topic, "@")
		if !found {
			model, idText = s.cfg.BindModel, topic
		}
		id, err := strconv.ParseUint(idText, 10, 64)
		if err != nil || model == "" {
			return ingest.Source{}, false
		}
		src = ingest.Source{Model: model, WorkerID: id, Endpoint: endpoint, Topic: topic}
	}
	for _, info := range infos {
		if info.Spec.WorkerID == src.WorkerID {
			return src, true // a registered worker's id: its events go to it
		}
	}
	return src, s.admitBoundWorker(src, infos)
}

// admitBoundWorker decides whether a topic may register a new worker,
// and registers it then, so that the next topic counts it (the bound
// socket's messages are resolved one at a time). Refusals are counted by
// reason and logged at most every bindLogEvery.
func (s *Server) admitBoundWorker(src ingest.Source, infos []indexer.WorkerInfo) bool {
	refuse := func(reason, fix string, err error) bool {
		s.caps.bindRefused.WithLabelValues(reason).Inc()
		if s.caps.logBindRefusal(time.Now()) {
			topic := src.Topic
			if len(topic) > 80 {
				topic = fmt.Sprintf("%.80q... (%d bytes)", topic, len(topic))
			}
			s.log.Warn("kvrouter: a topic on the bound endpoint may not register a worker; its messages are skipped",
				"topic", topic, "reason", reason, "error", errText(err), "fix", fix,
				"note", "logged at most every "+bindLogEvery.String()+"; counted in kvrouter_bind_refused_messages_total")
		}
		return false
	}
	if err := s.checkBoundLabels(src); err != nil {
		return refuse("invalid_label", "model names are at most 256 bytes of UTF-8, topics 512", err)
	}
	if len(s.cfg.BindTopics) > 0 && !topicAllowed(s.cfg.BindTopics, src.Topic) {
		return refuse("not_allowed", "add the topic (or a prefix*) to --bind-topics, or register the worker with its topic", nil)
	}
	bound := 0
	for _, info := range infos {
		if info.Spec.Endpoint == s.cfg.Bind {
			bound++
		}
	}
	if bound >= s.cfg.BindMaxWorkers {
		return refuse("max_workers", fmt.Sprintf("%d workers were registered from topics (--bind-max-workers %d): "+
			"remove stale ones (DELETE /v1/workers/{id}), raise the bound, or register the worker with its topic", bound, s.cfg.BindMaxWorkers), nil)
	}
	spec := indexer.WorkerSpec{WorkerID: src.WorkerID, Model: src.Model, Endpoint: src.Endpoint, Topic: src.Topic, DPSize: 1}
	isNew, err := s.ix.AddWorkerIfAbsent(spec)
	if err != nil {
		return refuse("invalid_label", "model names are at most 256 bytes of UTF-8, topics 512", err)
	}
	if isNew {
		s.log.Info("kvrouter: worker registered from a bound endpoint's topic",
			"worker_id", src.WorkerID, "model", src.Model, "topic", src.Topic, "bound_workers", bound+1, "bind_max_workers", s.cfg.BindMaxWorkers)
	}
	return true
}

func (s *Server) checkBoundLabels(src ingest.Source) error {
	if err := indexer.CheckLabel("model", src.Model, indexer.MaxLabelBytes); err != nil {
		return err
	}
	return indexer.CheckLabel("topic", src.Topic, indexer.MaxTopicBytes)
}

// topicAllowed reports whether a topic is in the allowlist: equal to an
// entry, or starting with an entry's text before its final "*".
func topicAllowed(allow []string, topic string) bool {
	for _, a := range allow {
		if prefix, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(topic, prefix) || a == topic {
			return true
		}
	}
	return false
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
