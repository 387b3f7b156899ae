package proxy

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"time"
)

// healthLoop polls every worker's GET /health each interval.
func (p *Proxy) healthLoop() {
	defer p.loopsDone.Done()
	t := time.NewTicker(p.opts.HealthInterval)
	defer t.Stop()
	for {
		p.CheckHealth()
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// CheckHealth polls every registered worker with a base URL once, in
// parallel, and takes those that fail out of rotation (those that pass
// back in). Workers without a base URL are not proxied to and keep their
// flag. It also refreshes the base URLs the proxy knows.
func (p *Proxy) CheckHealth() {
	infos := p.ix.Workers()
	urls := make(map[uint64]string, len(infos))
	var wg sync.WaitGroup
	for _, info := range infos {
		id, base, was := info.Spec.WorkerID, info.Spec.BaseURL, info.Healthy
		urls[id] = base
		if base == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, why := p.probe(base)
			if !ok && was && p.noteFailure(id) < p.opts.HealthFailures {
				return // one slow answer on a busy host is not an outage
			}
			if ok {
				p.noteSuccess(id)
			}
			if ok == was {
				return
			}
			if p.ix.SetHealthy(id, ok) != nil {
				return // removed meanwhile
			}
			if ok {
				p.log.Info("kvrouter: engine healthy again, back in rotation", "worker_id", id, "base_url", base)
			} else {
				p.log.Warn("kvrouter: engine failed its health check, out of rotation", "worker_id", id, "base_url", base, "why", why)
			}
		}()
	}
	wg.Wait()
	// The scrape reads its own copy: once published, baseURL fills
	// p.baseURLs under p.mu while the scrape runs.
	scrape := maps.Clone(urls)
	p.mu.Lock()
	p.baseURLs.Store(&urls)
	p.mu.Unlock()
	p.scrapeMetrics(scrape)
}

// probe reports whether base/health answers 200 in time.
func (p *Proxy) probe(base string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.HealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return false, err.Error()
	}
	p.authorize(req, nil)
	resp, err := p.side.Do(req)
	if err != nil {
		return false, err.Error()
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, "GET /health: " + resp.Status
	}
	return true, ""
}

// noteFailure counts a worker's consecutive failed checks.
func (p *Proxy) noteFailure(id uint64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures[id]++
	return p.failures[id]
}

func (p *Proxy) noteSuccess(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.failures, id)
}
