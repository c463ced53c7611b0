//go:build unix

package queue

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// processCPU is the CPU time the process has used, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
