package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSubscriberAPIRejectsBadUse(t *testing.T) {
	_, err := New(Options{})
	require.Error(t, err, "no handler")

	s, err := New(Options{Handler: newRecorder()})
	require.NoError(t, err)
	_, err = s.Subscribe(Subscription{WorkerID: 1})
	assert.ErrorContains(t, err, "no endpoint")
	_, err = s.Subscribe(Subscription{WorkerID: 1, Endpoint: "tcp://127.0.0.1:65535", DPSize: 2})
	assert.ErrorContains(t, err, "past 65535", "rank 1 would be port 65536")
	_, err = s.Subscribe(Subscription{WorkerID: 1, Endpoint: "tcp://127.0.0.1:5557", ReplayEndpoint: "udp://x:1"})
	assert.Error(t, err)
	assert.Empty(t, s.Sources(), "a refused subscription leaves nothing behind")

	_, err = s.Bind(Binding{Endpoint: "tcp://127.0.0.1:0"})
	assert.ErrorContains(t, err, "Resolve")
	resolve := func(string) (Source, bool) { return Source{}, false }
	_, err = s.Bind(Binding{Endpoint: "bogus://x", Resolve: resolve})
	assert.Error(t, err)
	addr, err := s.Bind(Binding{Endpoint: "tcp://127.0.0.1:0", Resolve: resolve})
	require.NoError(t, err)
	assert.NotNil(t, addr)
	_, err = s.Bind(Binding{Endpoint: "tcp://127.0.0.1:0", Resolve: resolve})
	assert.ErrorContains(t, err, "already bound")

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "idempotent")
	_, err = s.Subscribe(Subscription{WorkerID: 1, Endpoint: "tcp://127.0.0.1:5557"})
	assert.ErrorContains(t, err, "closed")
}
