package proxy

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvhash/kvhash/router/route/policy"
)

func TestParseVLLMGauges(t *testing.T) {
	text := `# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3
vllm:num_requests_running{engine="0",model_name="m"} 7
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
vllm:prefix_cache_hits_total{model_name="m"} 100
garbage line
vllm:num_requests_waiting 1
`
	m := parseVLLMGauges(bufio.NewScanner(strings.NewReader(text)))
	assert.Equal(t, policy.Metrics{Waiting: 4, Running: 7, KVUsage: 0.5}, m)
}
