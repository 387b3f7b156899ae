//go:build !race

package proxy_test

// raceDetector: whether the tests run under -race (timing bounds that
// the detector's slowdown would make meaningless are left to the
// benchmarks then).
const raceDetector = false
