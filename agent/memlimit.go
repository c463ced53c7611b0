package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// memLimitRatio is the share of the container's memory limit given to the Go
// runtime as its soft limit, leaving room for memory the runtime does not
// manage (thread stacks, the binary) before the kernel's OOM killer acts.
const memLimitRatio = 0.9

// SetMemoryLimitFromCgroup sets the Go runtime's soft memory limit to 90 % of
// the cgroup's memory limit (cgroup v2 memory.max, or v1
// memory.limit_in_bytes, under root), so that the garbage collector works
// harder before the container is OOM-killed rather than after. It does
// nothing when GOMEMLIMIT is set (the user chose) or no limit applies. It
// returns the limit set, 0 if none, and an error only for a limit file it
// could not read or parse.
func SetMemoryLimitFromCgroup(root string) (int64, error) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0, nil
	}
	limit, err := cgroupMemoryLimit(root)
	if err != nil || limit <= 0 {
		return 0, err
	}
	soft := int64(float64(limit) * memLimitRatio)
	debug.SetMemoryLimit(soft)
	return soft, nil
}

// cgroupMemoryLimit reads the memory limit of the process' cgroup under root
// (normally /sys/fs/cgroup): v2 first, then v1. It returns 0 when there is
// none ("max", or v1's page-rounded maximum).
func cgroupMemoryLimit(root string) (int64, error) {
	for _, name := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		path := filepath.Join(root, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("reading memory limit: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading memory limit: %s: %q is not a number of bytes", path, v)
		}
		// cgroup v1 reports "no limit" as the largest page-aligned int64.
		if n <= 0 || n >= math.MaxInt64&^4095 {
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// gcPercent is the garbage collector's target heap growth when GOGC is not
// set: the heap may grow by a quarter of the live heap between collections,
// not by all of it. The agent keeps its series rendered and reuses its
// buffers, so it allocates little once its lists are in, and collecting
// more often costs little CPU.
const gcPercent = 25

// SetGCPercentDefault sets the garbage collector's target to gcPercent
// unless GOGC is set (the user chose). It returns the target set, 0 if
// none.
func SetGCPercentDefault() int {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return 0
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent
}
