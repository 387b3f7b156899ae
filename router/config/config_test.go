package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kvrouter.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func TestParseFlagsOverrideFile(t *testing.T) {
	path := writeFile(t, `
listen: 127.0.0.1:9000
block_size: 32
log: {format: json, level: debug}
snapshot: {path: /tmp/x.snap, interval: 30s}
routing: {overlap_score_credit: 0.5, temperature: 0.1, policy: sglang}
workers:
  - {worker_id: 1, model: m, endpoint: "tcp://127.0.0.1:5557", dp_size: 2}
`)
	p, err := Parse("kvrouter", []string{"--config", path, "--block-size", "16", "--snapshot-interval", "1m",
		"--worker", "id=2,model=m,endpoint=tcp://127.0.0.1:6000,replay=tcp://127.0.0.1:6001"}, &bytes.Buffer{})
	require.NoError(t, err)
	c := p.Config
	assert.Equal(t, "127.0.0.1:9000", c.Listen, "from the file")
	assert.Equal(t, 16, c.BlockSize, "the flag wins")
	assert.Equal(t, "json", c.Log.Format)
	assert.Equal(t, time.Minute, c.Snapshot.Interval, "the flag wins")
	assert.Equal(t, "/tmp/x.snap", c.Snapshot.Path)
	assert.InDelta(t, 0.5, c.Routing.OverlapScoreCredit, 0)
	assert.InDelta(t, 1.0, c.Routing.PrefillLoadScale, 0, "default kept")
	assert.Equal(t, int64(DefaultZMQMaxMessageBytes), c.ZMQMaxMessageBytes, "default kept")
	assert.Equal(t, "sglang", c.Routing.Policy, "from the file")
	require.Len(t, c.Workers, 2)
	assert.Equal(t, 2, c.Workers[0].DPSize)
	assert.Equal(t, uint64(2), c.Workers[1].WorkerID)
	assert.Equal(t, "tcp://127.0.0.1:6001", c.Workers[1].ReplayEndpoint)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // "" = no --config
		args []string
		want string
	}{
		{"no block size", "", nil, "block_size"},
		{"unknown key", "block_size: 16\nblok: 1\n", nil, "field blok not found"},
		{"unknown nested key", "block_size: 16\nlog: {colour: red}\n", nil, "field colour not found"},
		{"wrong type", "block_size: sixteen\n", nil, "sixteen"},
		{"no engine slots", "", []string{"--block-size", "16", "--max-num-seqs", "0"}, "proxy.max_num_seqs"},
		{"negative engine queue", "block_size: 16\nproxy: {engine_queue: -1}\n", nil, "proxy.engine_queue"},
		{"no admission queue", "", []string{"--block-size", "16", "--admission-queue", "0"}, "proxy.admission_queue"},
		{"no admission timeout", "", []string{"--block-size", "16", "--admission-timeout", "0s"}, "proxy.admission_timeout"},
		{"fractional block size", "block_size: 16.9\n", nil, `"16.9" is not a whole number`},
		{"fractional worker id", "block_size: 16\nworkers:\n  - {worker_id: 1.5, model: m}\n", nil, `"1.5" is not a whole number`},
		{"huge block size", "", []string{"--block-size", "99999999999"}, "block_size: 99999999999"},
		{"bad duration", "block_size: 16\nsnapshot: {interval: soon}\n", nil, "soon"},
		{"unknown policy", "block_size: 16\nrouting: {policy: fastest}\n", nil, `routing.policy: "fastest"`},
		{"unknown policy flag", "", []string{"--block-size", "16", "--policy", "nope"}, `routing.policy: "nope"`},
		{"two documents", "block_size: 16\n---\nblock_size: 8\n", nil, "more than one"},
		{"bad log format", "", []string{"--block-size", "16", "--log-format", "xml"}, "log.format"},
		{"bad mode", "", []string{"--block-size", "16", "--stability-mode", "strict"}, "stability_mode"},
		{"credit above 1", "", []string{"--block-size", "16", "--overlap-score-credit", "2"}, "overlap_score_credit"},
		{"unknown flag", "", []string{"--block-size", "16", "--nope"}, "nope"},
		{"positional", "", []string{"--block-size", "16", "extra"}, "unexpected argument"},
		{"worker without model", "", []string{"--block-size", "16", "--worker", "id=1"}, "model"},
		{"worker bad key", "", []string{"--block-size", "16", "--worker", "id=1,model=m,port=3"}, "unknown key"},
		{"worker twice", "block_size: 16\nworkers: [{worker_id: 1, model: m}]\n",
			[]string{"--worker", "id=1,model=m"}, "listed twice"},
		{"bind without scheme", "", []string{"--block-size", "16", "--bind", "*:5557"}, "bind"},
		{"negative ingest workers", "", []string{"--block-size", "16", "--ingest-workers", "-1"}, "ingest_workers"},
		{"negative hold tokens", "", []string{"--block-size", "16", "--hold-tokens", "-1"}, "proxy.hold_tokens"},
		{"negative slot batch", "", []string{"--block-size", "16", "--slot-batch", "-1"}, "proxy.slot_batch"},
		{"zmq cap too small", "", []string{"--block-size", "16", "--zmq-max-message-bytes", "4095"}, "zmq_max_message_bytes"},
		{"zmq cap too large", "block_size: 16\nzmq_max_message_bytes: 4611686018427387905\n", nil, "zmq_max_message_bytes"},
		{"missing file", "", []string{"--config", "/nonexistent/kvrouter.yaml"}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.file != "" {
				args = append([]string{"--config", writeFile(t, tt.file)}, args...)
			}
			_, err := Parse("kvrouter", args, &bytes.Buffer{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestPrintedConfigLoadsBackTheSame(t *testing.T) {
	p, err := Parse("kvrouter", []string{"--block-size", "16", "--index-media", "CPU, STORAGE", "--zmq-max-message-bytes", "1048576",
		"--worker", "id=7,model=m,endpoint=tcp://127.0.0.1:5557,dp_size=2,topic=kv"}, &bytes.Buffer{})
	require.NoError(t, err)
	out, err := p.Config.YAML()
	require.NoError(t, err)
	assert.Contains(t, string(out), "block_size: 16")
	back, err := Decode(strings.NewReader(string(out)), Default())
	require.NoError(t, err)
	assert.Equal(t, p.Config, back)
	assert.Equal(t, []string{"CPU", "STORAGE"}, back.Index.Media)
	assert.Equal(t, int64(1<<20), back.ZMQMaxMessageBytes)
}

func TestEmptyFileIsTheDefaults(t *testing.T) {
	c, err := Decode(strings.NewReader(""), Default())
	require.NoError(t, err)
	assert.Equal(t, Default(), c)
}

func FuzzDecode(f *testing.F) {
	f.Add("block_size: 16\n")
	f.Add("workers: [{worker_id: 1, model: m}]\n")
	f.Add("log: {format: json}\nsnapshot: {interval: 5m}\n")
	f.Add("- 1\n- 2\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Decode(strings.NewReader(text), Default())
		if err != nil {
			assert.Equal(t, Default(), c, "a failed decode returns the base unchanged")
			return
		}
		_ = c.Validate() // must not panic
	})
}
