//go:build !amd64 || purego

package core

// commonPrefix returns how many leading elements a and b share.
func commonPrefix(a, b []uint64) int { return commonPrefixGo(a, b) }
