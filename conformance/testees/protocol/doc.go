// Package protocol is the conformance testee protocol (JSON lines, one
// request and one answer a line; see conformance/README.md, "Testee
// protocol"): the message types, shared by the runner and the Go testees,
// and Serve, the request loop of a Go testee.
//
// A testee translates requests into calls of its binding and the results
// back into answers; it never computes a hash or an index answer itself.
package protocol
