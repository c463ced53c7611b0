package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// wallClock tells a gap between two samples from a step of the machine's
// wall clock. The agent ticks by the monotonic clock and stamps samples by
// the wall clock, as Prometheus does; when the wall clock steps (an NTP
// correction, or a virtual machine paused and resumed, whose wall clock is
// set forward on resume while its monotonic clock stood still), one gap
// between stored samples grows by the step although no snapshot was missed.
// CI saw one of 28.9 s where 2 were expected, with every snapshot stored.
type wallClock struct{ start time.Time }

func startWallClock() wallClock { return wallClock{start: time.Now()} }

// stepped returns how far the wall clock has moved from the monotonic one
// since start, either way.
func (c wallClock) stepped() time.Duration {
	now := time.Now()
	return (now.Round(0).Sub(c.start.Round(0)) - now.Sub(c.start)).Abs()
}

// requireGap fails t unless gap is at most limit, plus the step of the wall
// clock since start, if there was one; it says so when it allowed one.
func (c wallClock) requireGap(t *testing.T, gap, limit time.Duration, msgAndArgs ...any) {
	t.Helper()
	step := c.stepped()
	if step > 100*time.Millisecond && gap > limit {
		t.Logf("the wall clock stepped by %s during the test: a gap of %s is allowed up to %s", step.Round(time.Millisecond), gap, limit+step)
	}
	require.LessOrEqual(t, gap, limit+step, msgAndArgs...)
}
