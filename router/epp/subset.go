package epp

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// The subset hint: the gateway names the endpoints a request may go to in
// its filter metadata (the endpoint picker protocol).
const (
	subsetNamespace = "envoy.lb.subset_hint"
	subsetKey       = "x-gateway-destination-endpoint-subset"
)

// subset is a request's subset hint; unset allows every endpoint, set and
// empty allows none.
type subset struct {
	set   bool
	addrs []string
}

func (s subset) allows(addr string) bool {
	if !s.set {
		return true
	}
	for _, a := range s.addrs {
		if a == addr {
			return true
		}
	}
	return false
}

// readSubset reads the hint from a request's metadata: a list of strings
// or one comma-separated string.
func readSubset(md *corev3.Metadata) subset {
	if md == nil {
		return subset{}
	}
	ns, ok := md.GetFilterMetadata()[subsetNamespace]
	if !ok {
		return subset{}
	}
	v, ok := ns.GetFields()[subsetKey]
	if !ok {
		return subset{}
	}
	out := subset{set: true}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		out.add(k.StringValue)
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			out.add(e.GetStringValue())
		}
	}
	return out
}

// readSubsetString is a hint given as one comma-separated string.
func readSubsetString(s string) subset {
	out := subset{set: true}
	out.add(s)
	return out
}

func (s *subset) add(list string) {
	for _, part := range strings.Split(list, ",") {
		if p := strings.TrimSpace(part); p != "" {
			s.addrs = append(s.addrs, p)
		}
	}
}
