package main

import "syscall"

// fileLimit is the process's limit on open descriptors. Go's runtime
// raises the soft limit to the hard one at start (os, on Unix): every
// client connection, engine connection and ZeroMQ socket is one, and the
// proxy's backpressure keeps the engines' share bounded; the rest is the
// clients'. process_open_fds and process_max_fds on /metrics show both.
func fileLimit() (soft, hard uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0
	}
	return lim.Cur, lim.Max
}
