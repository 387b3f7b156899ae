package core

// SpecVersion names the byte-exact hashing rules this package implements.
// Any change to any hashed byte is a new spec version with its own vectors.
const SpecVersion = "v1"

// BaseSeed is the XXH3-64 seed of spec v1: every local block hash starts
// from it, and the sequence chain always uses it unchanged.
const BaseSeed uint64 = 1337

// Version is the version of this implementation (not of the spec).
const Version = "0.1.0"
