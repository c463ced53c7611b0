package agent

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling thread has used (RUSAGE_THREAD):
// on a shared machine it counts only this thread's work, where wall time
// also counts the time others took the core.
func threadCPU() (time.Duration, bool) {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
