package serve

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzDynamoHandlers: any body to Dynamo's endpoints gets a JSON answer
// below 500 (a panic would be a 500 from the recover middleware).
func FuzzDynamoHandlers(f *testing.F) {
	srv, err := New(Options{Config: testConfig()})
	require.NoError(f, err)
	require.NoError(f, srv.Start())
	f.Cleanup(func() { _ = srv.Shutdown(f.Context()) })
	h := srv.Handler()
	for _, seed := range []struct {
		path uint8
		body string
	}{
		{0, `{"instance_id":1,"endpoint":"tcp://127.0.0.1:5557","model_name":"m","block_size":4}`},
		{0, `{"instance_id":1,"endpoint":"tcp://127.0.0.1:5558","model_name":"m","block_size":4,"dp_rank":1}`},
		{1, `{"instance_id":1,"model_name":"m","routing_group":"default","dp_rank":1}`},
		{2, `{"token_ids":[1,2,3,4,5,6,7,8],"model_name":"m","lora_name":"a","cache_salt":"s"}`},
		{3, `{"block_hashes":[-1,9223372036854775807],"model_name":"m"}`},
		{2, `{"token_ids":[4294967296],"model_name":"m"}`},
		{0, `[]`},
	} {
		f.Add(seed.path, seed.body)
	}
	paths := []string{"/register", "/unregister", "/query", "/query_by_hash"}
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		path := paths[int(which)%len(paths)]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body)))
		assert.Less(t, rec.Code, 500, "%s %q: %s", path, body, rec.Body.String())
		assert.True(t, json.Valid(rec.Body.Bytes()), "%s %q: %s", path, body, rec.Body.String())
	})
}
