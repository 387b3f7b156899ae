package abi

import "fmt"

// Recovered turns the value of a recovered panic into an error that maps
// to StatusInternal. Every export defers a function that calls recover()
// and reports Recovered(v), so that a bug in kvhash becomes an error status
// instead of taking the host process down.
func Recovered(v any) error {
	return fmt.Errorf("%w: recovered panic: %v (please report this bug)", ErrInternal, v)
}
