package config

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNATSFlagsAndValidation(t *testing.T) {
	p, err := Parse("kvrouter", []string{"--block-size", "16", "--nats", "embedded", "--nats-store", "/tmp/js",
		"--replica-id", "r1", "--nats-stream-max-age", "2h", "--nats-snapshot-interval", "30s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, NATS{URL: "embedded", Store: "/tmp/js", ReplicaID: "r1", StreamMaxAge: 2 * time.Hour, SnapshotInterval: 30 * time.Second}, p.Config.NATS)

	cases := []struct {
		name string
		args []string
		want string // "" = valid
	}{
		{"alone", nil, ""},
		{"a cluster", []string{"--nats", "nats://10.0.0.1:4222,nats://10.0.0.2:4222"}, ""},
		{"not a url", []string{"--nats", "10.0.0.1:4222"}, "nats.url"},
		{"store without embedded", []string{"--nats", "nats://h:4222", "--nats-store", "/x"}, "nats.store"},
		{"replica id alone", []string{"--replica-id", "r1"}, "need nats.url"},
		{"file snapshot and replicas", []string{"--nats", "embedded", "--snapshot", "/tmp/s"}, "snapshot.path"},
		{"bind and replicas", []string{"--nats", "embedded", "--bind", "tcp://*:5557"}, "bind"},
		{"replicated", []string{"--nats", "nats://h:4222", "--nats-stream-replicas", "3"}, ""},
		{"too replicated", []string{"--nats", "nats://h:4222", "--nats-stream-replicas", "7"}, "stream_replicas"},
		{"negative ttl", []string{"--nats", "embedded", "--nats-lease-ttl", "-1s"}, "lease_ttl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("kvrouter", append([]string{"--block-size", "16"}, c.args...), io.Discard)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}
