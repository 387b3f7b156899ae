package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/engine"
	"github.com/kvhash/kvhash/router/kvmock"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, o options)
	}{
		{"defaults are vLLM's", nil, func(t *testing.T, o options) {
			assert.Equal(t, "127.0.0.1:8000", o.listen)
			assert.Equal(t, "tcp://*:5557", o.cfg.EventsEndpoint)
			assert.Empty(t, o.cfg.ReplayEndpoint)
			assert.Equal(t, 16, o.cfg.BlockSize)
			assert.Equal(t, "sha256_cbor", o.cfg.HashAlgo)
			assert.Equal(t, "vllm-none-hash", o.cfg.HashSeed)
			assert.Equal(t, kvmock.EventFormatMap, o.cfg.EventFormat)
			assert.Equal(t, kvmock.HashFormatInt, o.cfg.HashFormat)
			assert.Equal(t, kvmock.ReplayShape4, o.cfg.ReplayShape)
			assert.Equal(t, 20*time.Millisecond, o.cfg.DecodeTimePerToken)
		}},
		{"everything set", []string{
			"--listen", ":9000", "--model", "m", "--num-blocks", "100", "--block-size", "32",
			"--hash-algo", "xxhash", "--hash-seed", "0", "--unstable", "--event-format", "array",
			"--hash-format", "bytes", "--replay-shape", "3", "--topic", "kv", "--dp-rank", "2",
			"--kv-events-endpoint", "tcp://router:5557", "--replay-endpoint", "tcp://*:5558",
			"--decode-ms-per-token", "2.5", "--speedup", "50", "--max-running", "8", "--step", "10ms",
			"--lora-modules", "sql=/models/sql,chat",
		}, func(t *testing.T, o options) {
			c := o.cfg
			assert.Equal(t, ":9000", o.listen)
			assert.Equal(t, "m", c.Model)
			assert.Equal(t, 100, c.NumBlocks)
			assert.Equal(t, 32, c.BlockSize)
			assert.Equal(t, "xxhash", c.HashAlgo)
			assert.True(t, c.Unstable)
			assert.Equal(t, kvmock.EventFormatArray, c.EventFormat)
			assert.Equal(t, kvmock.HashFormatBytes, c.HashFormat)
			assert.Equal(t, kvmock.ReplayShape3, c.ReplayShape)
			assert.Equal(t, uint32(2), c.DPRank)
			assert.Equal(t, "tcp://router:5557", c.EventsEndpoint)
			assert.Equal(t, 2500*time.Microsecond, c.DecodeTimePerToken)
			assert.Equal(t, 50.0, c.Speedup)
			assert.Equal(t, 8, c.MaxRunning)
			assert.Equal(t, 10*time.Millisecond, c.StepInterval)
			assert.Equal(t, []string{"sql", "chat"}, c.LoRAModules)
		}},
		{"vLLM's --kv-events-config", []string{"--kv-events-config",
			`{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:6000", "replay_endpoint": "tcp://*:6001", "topic": "kv", "buffer_steps": 77}`,
		}, func(t *testing.T, o options) {
			assert.Equal(t, "tcp://*:6000", o.cfg.EventsEndpoint)
			assert.Equal(t, "tcp://*:6001", o.cfg.ReplayEndpoint)
			assert.Equal(t, "kv", o.cfg.Topic)
			assert.Equal(t, 77, o.cfg.ReplayBuffer)
		}},
		{"events disabled", []string{"--kv-events-config", `{"enable_kv_cache_events": false}`}, func(t *testing.T, o options) {
			assert.Empty(t, o.cfg.EventsEndpoint)
		}},
		{"the rates' timing by default", nil, func(t *testing.T, o options) {
			assert.Nil(t, o.cfg.Profile)
			assert.Equal(t, 8192, o.cfg.MaxNumBatchedTokens)
		}},
		{"Dynamo's mocker timing", []string{"--profile", "dynamo-mocker", "--max-num-batched-tokens", "2048"}, func(t *testing.T, o options) {
			require.NotNil(t, o.cfg.Profile)
			assert.Equal(t, engine.DefaultProfile(), *o.cfg.Profile)
			assert.Equal(t, 2048, o.cfg.MaxNumBatchedTokens)
		}},
		{"a profile file", []string{"--profile", "../../router/engine/profiles/dynamo-mocker.json"}, func(t *testing.T, o options) {
			require.NotNil(t, o.cfg.Profile)
			assert.Equal(t, "dynamo-mocker", o.cfg.Profile.Name)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			o, err := parseFlags(tc.args, &out)
			require.NoError(t, err, out.String())
			tc.check(t, o)
		})
	}
}

func TestParseFlagsRejects(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "not defined"},
		{"stray argument", []string{"serve"}, "unexpected arguments"},
		{"bad event format", []string{"--event-format", "json"}, "event format"},
		{"bad hash format", []string{"--hash-format", "hex"}, "hash format"},
		{"bad replay shape", []string{"--replay-shape", "5"}, "replay-shape"},
		{"bad hash algo", []string{"--hash-algo", "md5"}, "hash algo"},
		{"zero block size", []string{"--block-size", "0"}, "block size"},
		{"zero speedup", []string{"--speedup", "0"}, "speedup"},
		{"replay without events", []string{"--kv-events-endpoint", "", "--replay-endpoint", "tcp://*:1"}, "replay endpoint needs"},
		{"endpoint without transport", []string{"--kv-events-endpoint", "localhost:5557"}, "transport"},
		{"bad kv-events-config", []string{"--kv-events-config", "{"}, "kv-events-config"},
		{"other publisher", []string{"--kv-events-config", `{"publisher":"nats"}`}, "zmq"},
		{"bad log level", []string{"--log-level", "loud"}, "log-level"},
		{"LoRA named like the model", []string{"--model", "m", "--lora-modules", "m"}, "LoRA module"},
		{"LoRA twice", []string{"--lora-modules", "a,a"}, "LoRA module"},
		{"missing profile", []string{"--profile", "/nonexistent/p.json"}, "--profile"},
		{"zero token budget", []string{"--max-num-batched-tokens", "0"}, "max num batched tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := parseFlags(tc.args, &out)
			require.Error(t, err)
			assert.Contains(t, err.Error()+out.String(), tc.want)
		})
	}
}

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	assert.Equal(t, 0, run(t.Context(), []string{"--help"}, &out))
	assert.Contains(t, out.String(), "simulated vLLM engine")
	assert.Contains(t, out.String(), "-kv-events-endpoint")
	out.Reset()
	assert.Equal(t, 2, run(t.Context(), []string{"--block-size", "x"}, &out))
}
