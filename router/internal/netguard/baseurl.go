package netguard

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ParseBaseURL checks an engine's base URL and returns it normalized
// (without a trailing slash), the form the proxy appends
// "/v1/completions", "/tokenize" and "/health" to. It must be http or
// https, name a host (with an optional port), carry no user info, query
// or fragment, and its path, if any, must be a plain prefix ("/engine-a",
// "/v1"): letters, digits and "-._~" segments, no "." or "..", no
// escapes, no empty segments. Anything else is an error saying why.
func ParseBaseURL(raw string) (string, *url.URL, error) {
	bad := func(why string) (string, *url.URL, error) {
		return "", nil, fmt.Errorf("base_url %q: %s", raw, why)
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, "\\\t\r\n ") {
		return bad("must not contain spaces or backslashes")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad("want http://host:port or https://host:port")
	}
	if u.Opaque != "" || u.Host == "" {
		return bad("no host; want http://host:port")
	}
	if u.User != nil {
		return bad("must not carry user info (user:password@)")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#") {
		return bad("must not have a query or a fragment")
	}
	if err := checkHost(u); err != nil {
		return bad(err.Error())
	}
	if u.RawPath != "" || strings.Contains(raw, "%") {
		return bad("must not contain escapes (%)")
	}
	path := strings.TrimSuffix(u.Path, "/")
	if path != "" {
		for seg := range strings.SplitSeq(path[1:], "/") {
			if !plainSegment(seg) {
				return bad("path must be a plain prefix (/engine-a): no empty, \".\" or \"..\" segments, only letters, digits and -._~")
			}
		}
	}
	norm := u.Scheme + "://" + u.Host + path
	u.Path = path
	return norm, u, nil
}

// checkHost accepts a DNS name or an IP address, and a port 1..65535 if
// one is given.
func checkHost(u *url.URL) error {
	host, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("empty port")
	}
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("port %q: want 1..65535", port)
		}
	}
	if host == "" {
		return fmt.Errorf("no host")
	}
	if strings.Contains(u.Host, "[") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Errorf("host %q: not an IPv6 address", host)
		}
		return nil
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("host %q: not a DNS name", host)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("host %q: not a DNS name", host)
			}
		}
	}
	return nil
}

func plainSegment(seg string) bool {
	if seg == "" || seg == "." || seg == ".." {
		return false
	}
	for _, c := range seg {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
			return false
		}
	}
	return true
}
