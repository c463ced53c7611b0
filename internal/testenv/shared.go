package testenv

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// shared is the control plane of SharedControlPlane, started once per test
// binary.
var shared struct {
	once sync.Once
	// mu guards cp, dir and err after once.
	mu  sync.Mutex
	cp  *ControlPlane
	dir string
	err error
}

// SharedControlPlane returns a control plane shared by every test of the
// binary, started on first use: tests give their objects their own
// namespaces and name prefixes. Without the binaries the test is skipped,
// except in CI (CI=true), where that is a failure. Call StopShared from
// TestMain.
func SharedControlPlane(t testing.TB) *ControlPlane {
	t.Helper()
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := Binary(b); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("missing binaries in CI: %v", err)
			}
			t.Skip(err)
		}
	}
	shared.once.Do(func() {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		shared.dir, shared.err = os.MkdirTemp("", "ksp-controlplane-")
		if shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.cp, shared.err = StartControlPlane(ctx, shared.dir)
	})
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.err != nil {
		t.Fatalf("starting the shared control plane: %v", shared.err)
	}
	return shared.cp
}

// StopShared stops the shared control plane, if one was started, and
// removes its folder.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cp != nil {
		shared.cp.Stop()
		shared.cp = nil
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}
