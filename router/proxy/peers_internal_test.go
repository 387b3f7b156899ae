package proxy

import (
	"bufio"
	"strconv"
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

// FuzzParseVLLMGauges: an engine's /metrics is input from the network.
// Any text parses without panicking; the three gauges written among
// arbitrary other lines read back as written.
func FuzzParseVLLMGauges(f *testing.F) {
	f.Add(uint16(3), uint16(7), uint16(250), "vllm:prefix_cache_hits_total 5\n# comment")
	f.Add(uint16(0), uint16(0), uint16(0), "garbage {} } { 1 2 3")
	f.Fuzz(func(t *testing.T, waiting, running, kvPermille uint16, junk string) {
		_ = parseVLLMGauges(bufio.NewScanner(strings.NewReader(junk)))
		var clean []string
		for _, l := range strings.Split(junk, "\n") {
			if !strings.Contains(l, "vllm:num_requests") && !strings.Contains(l, "_cache_usage_perc") {
				clean = append(clean, l)
			}
		}
		kv := float64(kvPermille%1001) / 1000
		text := strings.Join(clean, "\n") + "\n" + strings.Join([]string{
			"vllm:num_requests_waiting{model_name=\"m\"} " + strconv.Itoa(int(waiting)),
			"vllm:num_requests_running " + strconv.Itoa(int(running)),
			"vllm:kv_cache_usage_perc{engine=\"0\"} " + strconv.FormatFloat(kv, 'g', -1, 64),
		}, "\n") + "\n"
		m := parseVLLMGauges(bufio.NewScanner(strings.NewReader(text)))
		assert.Equal(t, policy.Metrics{Waiting: int(waiting), Running: int(running), KVUsage: kv}, m)
	})
}
