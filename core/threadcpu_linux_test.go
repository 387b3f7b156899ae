package core

import (
	"syscall"
	"unsafe"
)

// threadCPU returns the CPU time, in nanoseconds, the calling OS thread
// has used: CLOCK_THREAD_CPUTIME_ID, which the scheduler keeps to the
// nanosecond (getrusage's thread times are sampled at the timer tick).
func threadCPU() int64 {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return ts.Nano()
}
