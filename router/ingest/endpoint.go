package ingest

import (
	"fmt"
	"strconv"
	"strings"
)

// RankEndpoint is where data-parallel rank r of an engine publishes, as
// vLLM and SGLang offset it: a tcp port plus r; an ipc or inproc name with
// "_dp<r>" appended. Rank 0 is the endpoint itself ("" stays ""); any
// other scheme is an error.
func RankEndpoint(endpoint string, rank uint32) (string, error) {
	if endpoint == "" {
		return "", nil
	}
	switch {
	case rank == 0 && (strings.HasPrefix(endpoint, "tcp://") || strings.HasPrefix(endpoint, "ipc://") ||
		strings.HasPrefix(endpoint, "inproc://")):
		return endpoint, nil
	case strings.HasPrefix(endpoint, "tcp://"):
		i := strings.LastIndexByte(endpoint, ':')
		port, err := strconv.Atoi(endpoint[i+1:])
		if i < len("tcp://") || err != nil {
			return "", fmt.Errorf("endpoint %q: no port to offset for dp rank %d", endpoint, rank)
		}
		if port+int(rank) > 65535 {
			return "", fmt.Errorf("endpoint %q: port %d + dp rank %d is past 65535", endpoint, port, rank)
		}
		return endpoint[:i+1] + strconv.Itoa(port+int(rank)), nil
	case strings.HasPrefix(endpoint, "ipc://"), strings.HasPrefix(endpoint, "inproc://"):
		return endpoint + "_dp" + strconv.FormatUint(uint64(rank), 10), nil
	}
	return "", fmt.Errorf("endpoint %q: want tcp://, ipc:// or inproc://", endpoint)
}

// ParseLLMDTopic splits a topic as llm-d's engines publish to a central
// endpoint: "kv@<pod-ip>:<port>@<model>". A Resolver can map the pod
// address to a worker.
func ParseLLMDTopic(topic string) (pod, model string, ok bool) {
	rest, found := strings.CutPrefix(topic, "kv@")
	if !found {
		return "", "", false
	}
	pod, model, found = strings.Cut(rest, "@")
	if !found || pod == "" || model == "" {
		return "", "", false
	}
	return pod, model, true
}
