// Package e2e runs the agent against the real parts: etcd, kube-apiserver
// and Prometheus built from the Go module proxy by scripts/build-tools.sh,
// all on 127.0.0.1. Without the binaries the tests are skipped, except in CI
// (CI=true), where that is a failure.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// env is shared by every test of the package: one control plane and one
// Prometheus; each test uses its own namespace and node names.
var env struct {
	cp   *testenv.ControlPlane
	prom *testenv.Prometheus
	// skip says why the tests cannot run, when they cannot.
	skip string
	// dir holds the logs, and what tests build once (buildAgent); it is
	// removed when every test passed.
	dir string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	for _, b := range []string{"etcd", "kube-apiserver", "prometheus"} {
		if _, err := testenv.Binary(b); err != nil {
			if os.Getenv("CI") == "true" {
				fmt.Fprintln(os.Stderr, "e2e: missing binaries in CI:", err)
				return 1
			}
			env.skip = err.Error()
			return m.Run()
		}
	}
	dir, err := os.MkdirTemp("", "ksp-e2e-")
	env.dir = dir
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if env.cp, err = testenv.StartControlPlane(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting control plane:", err)
		return 1
	}
	defer env.cp.Stop()
	if env.prom, err = testenv.StartPrometheus(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting prometheus:", err)
		return 1
	}
	defer env.prom.Stop()
	code := m.Run()
	// Before its folder goes: the node's processes write there.
	stopRealNode()
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "e2e: logs kept in", dir)
	}
	return code
}

// needEnv skips the test when the real parts are not built.
func needEnv(t *testing.T) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
}
