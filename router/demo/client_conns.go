package demo

import (
	"net/http"
	"time"
)

// replayClient is the replay's HTTP client: at most conns connections,
// and an idle one let go well before kvrouter closes it (serverIdle,
// limits.idle_timeout). A POST sent on a connection the server is
// closing at that moment gets no answer, and net/http does not resend a
// POST; a run that follows a busier one reuses connections that sat idle
// for minutes, which is when the demo saw requests fail that way.
func replayClient(conns int, serverIdle time.Duration) *http.Client {
	idle := 30 * time.Second
	if serverIdle > 0 && serverIdle/4 < idle {
		idle = serverIdle / 4
	}
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: conns, IdleConnTimeout: idle}}
}
