//go:build !race

package demo_test

const raceDetector = false
