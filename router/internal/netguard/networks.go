package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrNotAllowed is an address outside the allowed networks.
var ErrNotAllowed = errors.New("outside the allowed engine networks")

// Networks is the set of networks engines may live in. A nil or empty
// set allows any address.
type Networks struct {
	prefixes []netip.Prefix
}

// ParseNetworks reads CIDRs ("10.0.0.0/8", "fd00::/8"); a bare address
// is its own /32 or /128. No CIDRs: any address.
func ParseNetworks(cidrs []string) (*Networks, error) {
	n := &Networks{}
	var errs []error
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			a, aerr := netip.ParseAddr(c)
			if aerr != nil {
				errs = append(errs, fmt.Errorf("%q: want a CIDR (10.0.0.0/8) or an address", c))
				continue
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		n.prefixes = append(n.prefixes, p.Masked())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return n, nil
}

// Any reports whether every address is allowed.
func (n *Networks) Any() bool { return n == nil || len(n.prefixes) == 0 }

// Allows reports whether ip is inside the allowed networks.
func (n *Networks) Allows(ip netip.Addr) bool {
	if n.Any() {
		return true
	}
	ip = ip.Unmap()
	for _, p := range n.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// String lists the networks ("any" when all are allowed).
func (n *Networks) String() string {
	if n.Any() {
		return "any"
	}
	s := make([]string, len(n.prefixes))
	for i, p := range n.prefixes {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// CheckHost resolves host (a name or an address) and fails unless every
// address it resolves to is allowed. With any network allowed it does
// not resolve at all.
func (n *Networks) CheckHost(ctx context.Context, host string) error {
	if n.Any() {
		return nil
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if !n.Allows(a) {
			return fmt.Errorf("%s resolves to %s: %w (%s)", host, a.Unmap(), ErrNotAllowed, n)
		}
	}
	return nil
}

func lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolving %s: no address", host)
	}
	return addrs, nil
}

// Control is a net.Dialer Control hook: it refuses to connect to an
// address outside the networks, whatever name led there.
func (n *Networks) Control(_, address string, _ syscall.RawConn) error {
	if n.Any() {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("netguard: dialing %q: %w", address, err)
	}
	if !n.Allows(ap.Addr()) {
		return fmt.Errorf("netguard: dialing %s: %w (%s)", address, ErrNotAllowed, n)
	}
	return nil
}
