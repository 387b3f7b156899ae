//go:build race

package sim

// raceDetector: the race detector slows a whole-trace replay several
// times over; mk/92-bench-routing.mk runs the DynoSim comparison without
// it (every other test of the package runs with it).
const raceDetector = true
