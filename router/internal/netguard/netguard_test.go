package netguard

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBaseURL(t *testing.T) {
	tests := []struct {
		raw, want string // want "": rejected
	}{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000"},
		{"https://engine-a.internal", "https://engine-a.internal"},
		{"http://[::1]:8000", "http://[::1]:8000"},
		{"http://engine:8000/v1", "http://engine:8000/v1"},
		{"http://engine:8000/pool-a/engine_1/", "http://engine:8000/pool-a/engine_1"},
		{"HTTP://engine:8000", "http://engine:8000"},
		{"file:///etc/passwd", ""},
		{"not a url", ""},
		{"", ""},
		{"ftp://engine:21", ""},
		{"engine:8000", ""},
		{"//engine:8000", ""},
		{"http://", ""},
		{"http://:8000", ""},
		{"http://user:pw@engine:8000", ""},
		{"http://engine:8000?x=1", ""},
		{"http://engine:8000/?", ""},
		{"http://engine:8000#frag", ""},
		{"http://engine:8000/a/../b", ""},
		{"http://engine:8000/./a", ""},
		{"http://engine:8000//a", ""},
		{"http://engine:8000/a%2f..", ""},
		{"http://engine:8000/a b", ""},
		{"http://engine:0", ""},
		{"http://engine:99999", ""},
		{"http://engine:", ""},
		{"http://engine\\@evil:8000", ""},
		{"http://-engine:8000", ""},
		{"http://[fe80::1%25eth0]:8000", ""},
		{" http://engine:8000", ""},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			got, u, err := ParseBaseURL(tc.raw)
			if tc.want == "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "base_url")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.NotEmpty(t, u.Hostname())
		})
	}
}

func TestNetworksAllows(t *testing.T) {
	n, err := ParseNetworks([]string{"10.0.0.0/8", " 192.168.1.7 ", "fd00::/8", "::ffff:172.16.0.0/108"})
	require.NoError(t, err)
	tests := []struct {
		ip   string
		want bool
	}{
		{"10.1.2.3", true},
		{"11.0.0.1", false},
		{"192.168.1.7", true},
		{"192.168.1.8", false},
		{"fd12::1", true},
		{"fe80::1", false},
		{"::ffff:10.0.0.1", true}, // IPv4-mapped: the IPv4 rule applies
		{"172.16.5.5", true},
		{"127.0.0.1", false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, n.Allows(netip.MustParseAddr(tc.ip)), tc.ip)
	}
	assert.False(t, n.Any())
	assert.Equal(t, "10.0.0.0/8,192.168.1.7/32,fd00::/8,172.16.0.0/12", n.String())
}

func TestParseNetworksErrors(t *testing.T) {
	_, err := ParseNetworks([]string{"10.0.0.0/33", "nope"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"nope"`)
	any, err := ParseNetworks(nil)
	require.NoError(t, err)
	assert.True(t, any.Any())
	assert.True(t, any.Allows(netip.MustParseAddr("8.8.8.8")))
	assert.Equal(t, "any", any.String())
}

func TestCheckHost(t *testing.T) {
	n, err := ParseNetworks([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, n.CheckHost(ctx, "127.0.0.1"))
	require.NoError(t, n.CheckHost(ctx, "localhost"))
	err = n.CheckHost(ctx, "10.0.0.1")
	require.ErrorIs(t, err, ErrNotAllowed)
	var none *Networks
	require.NoError(t, none.CheckHost(ctx, "name.invalid"), "any network: no resolution at all")
}

// The dial hook is what DNS rebinding cannot pass: a client whose
// transport dials through it reaches an allowed address and is refused
// anywhere else, before any byte is sent.
func TestControlRefusesDialsOutside(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	client := func(cidrs ...string) *http.Client {
		n, err := ParseNetworks(cidrs)
		require.NoError(t, err)
		d := &net.Dialer{Timeout: time.Second, Control: n.Control}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 2 * time.Second}
	}
	resp, err := client("127.0.0.0/8").Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 1, hits)

	_, err = client("10.0.0.0/8").Get(srv.URL)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNotAllowed), "%v", err)
	assert.Equal(t, 1, hits, "the refused dial never reached the server")
}

func FuzzParseBaseURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8000", "http://e:1/v1", "file:///x", "http://u@h", "http://h/a/../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		norm, u, err := ParseBaseURL(raw)
		if err != nil {
			return
		}
		// Whatever is accepted is stable: normalized once, it stays so,
		// and it has a host and no user info.
		again, _, err := ParseBaseURL(norm)
		require.NoError(t, err, "normalized %q of %q", norm, raw)
		assert.Equal(t, norm, again)
		assert.NotEmpty(t, u.Hostname())
		assert.Nil(t, u.User)
	})
}
