//go:build race

package demo_test

// raceDetector: the race detector slows kvrouter several times over, so
// a replay at the demo's pace measures the detector, not the routing;
// mk/90-demo.mk runs the replays without it (the proxy's own tests run
// with it).
const raceDetector = true
