package epp_test

import (
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/epp"
)

// With the proxy's holding shared (as kvrouter wires it), a request that
// arrives while both workers have a prefill queued (hold_tokens 1: any)
// gets no pick until one of them reports its first token; then it is
// picked.
func TestPickerHoldsWhileSaturated(t *testing.T) {
	po := startPicker(t, epp.Options{}, true, func(c *config.Config) { c.Proxy.HoldTokens = 1 })
	duplex := filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	var streams []extprocv3.ExternalProcessor_ProcessClient
	for _, body := range []string{`{"model":"m","prompt":[1,2,3,4,5,6,7,8]}`, `{"model":"m","prompt":[9,10,11,12,13,14,15,16]}`} {
		st, got, cancel := po.open(t, duplex, "/v1/completions", body, nil)
		defer cancel()
		require.NotEmpty(t, destination(got[0]), "picked at once: a worker has room")
		streams = append(streams, st)
	}
	picked := make(chan string, 1)
	go func() {
		_, got, cancel := po.open(t, duplex, "/v1/completions", `{"model":"m","prompt":[17,18,19,20]}`, nil)
		defer cancel()
		picked <- destination(got[0])
	}()
	require.Eventually(t, func() bool { return po.srv.Proxy().Held() == 1 }, 5*time.Second, time.Millisecond, "held while both workers have a prefill queued")
	select {
	case d := <-picked:
		t.Fatalf("picked %q while every worker had a prefill queued", d)
	case <-time.After(100 * time.Millisecond):
	}
	// The first request's first chunk: its prefill is done, a worker has room.
	st := streams[0]
	require.NoError(t, st.Send(&extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{}}}}))
	_, err := st.Recv()
	require.NoError(t, err)
	require.NoError(t, st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: []byte("data: 1\n\n")}}}))
	select {
	case d := <-picked:
		assert.NotEmpty(t, d)
	case <-time.After(5 * time.Second):
		t.Fatal("the held request was never picked")
	}
	assert.Zero(t, po.srv.Proxy().Held())
}
