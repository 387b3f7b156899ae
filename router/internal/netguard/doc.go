// Package netguard is what kvrouter checks before it connects to an
// address a client gave it (a worker's base_url): the URL's shape, and
// whether the address is inside the networks engines may live in.
//
// The network check runs twice: at registration, on the addresses the
// host name resolves to then, and at every dial, on the address actually
// dialed (Networks.Control, a net.Dialer hook), so a name that resolves
// elsewhere later (DNS rebinding) still cannot reach outside.
package netguard
