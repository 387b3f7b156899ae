/* Compiled by `make c-header-check` with cgo's generated header force-
 * included first and `const` defined away: any function whose parameter or
 * result types in kvhash.h differ from what the Go exports really take is
 * a "conflicting types" error. Nothing here runs. */
#include "kvhash.h"
