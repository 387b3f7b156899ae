//go:build race

package proxy_test

const raceDetector = true
